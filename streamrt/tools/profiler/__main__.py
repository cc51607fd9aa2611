"""The CLI: ``streamrt-prof report RUN [--compare RUN2]``, ``streamrt-prof trace RUN -o
trace.json``, ``streamrt-prof html RUN -o report.html`` (also ``python -m streamrt.tools.profiler``)."""
from __future__ import annotations

import argparse
import sys

from . import report


def main(argv=None):
    ap = argparse.ArgumentParser(prog="streamrt-prof", description="Reports on streamrt runs.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report", help="summary, compute, I/O and runtime/cache tables")
    r.add_argument("run")
    r.add_argument("--compare", metavar="RUN2", help="show the difference to another run")
    r.add_argument("--limit", type=int, default=30, help="source lines shown (default 30)")
    t = sub.add_parser("trace", help="Chrome Trace Event file (Perfetto, chrome://tracing)")
    t.add_argument("run")
    t.add_argument("-o", "--output", default="trace.json")
    h = sub.add_parser("html", help="self-contained HTML report")
    h.add_argument("run")
    h.add_argument("-o", "--output", default="report.html")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "report":
            report.print_report(a.run, a.compare, a.limit)
        elif a.cmd == "trace":
            print(report.chrome_trace(a.run, a.output))
        else:
            print(report.html_report(a.run, a.output))
    except (OSError, ValueError) as e:
        print(f"streamrt-prof: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
