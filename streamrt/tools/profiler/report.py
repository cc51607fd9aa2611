"""Reports on a run file: tables (rich), a comparison of two runs, a Chrome/Perfetto trace
and a self-contained HTML page. Pure: reads the JSON-lines file, imports no runtime part."""
from __future__ import annotations

import html
import json
import linecache
import os
import sys
from collections import defaultdict


class Run:
    """A loaded run file, aggregated per source line."""

    def __init__(self, path):
        self.path = path
        self.header, self.sites, self.calls, self.texts = {}, {}, {}, {}
        self.kernels, self.compiles, self.caches = [], [], []
        self.transfers, self.waits, self.flushes = [], [], []
        self.wall = 0.0
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        if not any(ln.strip() for ln in lines):
            raise ValueError(f"{path} is empty: not a streamrt profile (was the profiled run "
                             "killed before its run file was written?)")
        for n, ln in enumerate(lines, 1):
            ln = ln.strip()
            if not ln:
                continue
            try:
                r = json.loads(ln)
                if not isinstance(r, dict):
                    raise ValueError("not a JSON object")
            except ValueError as e:
                if n == 1:
                    raise ValueError(f"{path} is not a streamrt profile (its first line is not "
                                     f"a JSON record: {e})") from None
                raise ValueError(f"{path} is damaged: line {n} is not a JSON record ({e}); "
                                 "a run file is JSON lines, written whole when the profile "
                                 "ends") from None
            t = r.get("t")
            if t == "header":
                self.header = r
            elif t == "site":
                self.sites[r["id"]] = (r["file"], r["line"], r["function"])
                self.texts[r["id"]] = r.get("text")
            elif t == "pc":
                self.calls[r["site"]] = r["calls"]
            elif t == "ck":
                self.kernels.append(r)
            elif t == "compile":
                self.compiles.append(r)
            elif t == "cache":
                self.caches.append(r)
            elif t == "transfer":
                self.transfers.append(r)
            elif t == "wait":
                self.waits.append(r)
            elif t == "flush":
                self.flushes.append(r)
            elif t == "end":
                self.wall = r["wall"]
        if self.header.get("format") != "streamrt-profile":
            raise ValueError(f"{path} is not a streamrt profile")

    def label(self, sid):
        """``file:line`` of a call site, the file relative to the working directory when it
        lies under it."""
        s = self.sites.get(int(sid))
        return f"{_rel(s[0])}:{s[1]}" if s else "(unknown)"

    def source(self, label):
        """The source text of the line ``label`` names (recorded in the run file, else read
        now), or ''."""
        for sid, s in self.sites.items():
            if f"{_rel(s[0])}:{s[1]}" == label:
                t = self.texts.get(sid)
                return t if t is not None else linecache.getline(s[0], s[1]).strip()
        return ""

    def lines(self):
        """Per source line: attributed time, measured time (kernels containing it), calls,
        kernels, bytes (attributed). Sorted by attributed time, most expensive first."""
        att = defaultdict(float)
        meas = defaultdict(float)
        nk = defaultdict(int)
        byt = defaultdict(float)
        for k in self.kernels:
            for sid, w in k["weights"].items():
                lab = self.label(sid)
                att[lab] += k["dur"] * w
                meas[lab] += k["dur"]
                nk[lab] += 1
                byt[lab] += (k["bytes_in"] + k["bytes_out"]) * w
        calls = defaultdict(int)
        for sid, n in self.calls.items():
            calls[self.label(sid)] += n
        labs = set(att) | set(calls)
        rows = [{"line": lab, "attributed": att[lab], "measured": meas[lab],
                 "calls": calls[lab], "kernels": nk[lab], "bytes": byt[lab]} for lab in labs]
        rows.sort(key=lambda r: (-r["attributed"], -r["calls"], r["line"]))
        return rows

    def summary(self):
        kt = sum(k["dur"] for k in self.kernels)
        by = defaultdict(float)
        for k in self.kernels:
            by[k["executor"]] += k["dur"]
        hits = defaultdict(lambda: [0, 0])
        for c in self.caches:
            hits[c["cache"]][0 if c["hit"] else 1] += 1
        comp = [c for c in self.compiles if c["level"] == "compiled"]
        return {
            "wall": self.wall, "kernel_time": kt, "kernels": len(self.kernels),
            "executors": dict(by), "ops_recorded": sum(self.calls.values()),
            "flushes": len(self.flushes), "compiles": len(comp),
            "compile_time": sum(c["dur"] for c in comp),
            "disk_loads": sum(1 for c in self.compiles if c["level"] == "disk"),
            "bytes_in": sum(k["bytes_in"] for k in self.kernels),
            "bytes_out": sum(k["bytes_out"] for k in self.kernels),
            "to_device": sum(t["bytes"] for t in self.transfers if t["direction"] == "to_device"),
            "to_host": sum(t["bytes"] for t in self.transfers if t["direction"] == "to_host"),
            "flow_waits": len(self.waits), "flow_wait_time": sum(w["dur"] for w in self.waits),
            "cache": {k: {"hits": v[0], "misses": v[1]} for k, v in hits.items()},
        }

    def cache_sites(self):
        """Per (cache, first call site): hits, misses, and the explanations of misses that
        came after a hit at that site (the interesting ones: something changed)."""
        out = {}
        for c in self.caches:
            key = (c["cache"], self.label(c["site"]))
            d = out.setdefault(key, {"hits": 0, "misses": 0, "changed": []})
            if c["hit"]:
                d["hits"] += 1
            else:
                if d["hits"] and c.get("why") and c["why"] not in d["changed"]:
                    d["changed"].append(c["why"])
                d["misses"] += 1
        return out


def _rel(path):
    try:
        r = os.path.relpath(path)
    except ValueError:          # (another drive)
        return path
    return path if r.startswith(os.pardir) else r


def _fmt_t(s):
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def _fmt_b(b):
    for unit in ("B", "KB", "MB", "GB"):
        if abs(b) < 1024 or unit == "GB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024
    return str(b)


def print_report(path, compare=None, limit=30, console=None):
    from rich.console import Console     # (rich's import is ~30 ms: only for the table)
    from rich.table import Table         # (as above)
    con = console or Console(width=None if sys.stdout.isatty() else 140)
    run = Run(path)
    other = Run(compare) if compare else None
    s = run.summary()

    t = Table(title=f"Summary — {path}", show_header=False)
    t.add_column("what")
    t.add_column("value", justify="right")
    t.add_row("wall time", _fmt_t(s["wall"]))
    t.add_row("kernel time", _fmt_t(s["kernel_time"]))
    for ex, v in sorted(s["executors"].items()):
        t.add_row(f"  on {ex}", _fmt_t(v))
    t.add_row("kernels run", str(s["kernels"]))
    t.add_row("ops recorded", str(s["ops_recorded"]))
    t.add_row("flushes", str(s["flushes"]))
    t.add_row("kernels compiled", f"{s['compiles']} ({_fmt_t(s['compile_time'])})")
    t.add_row("kernels loaded from disk", str(s["disk_loads"]))
    for name, hm in sorted(s["cache"].items()):
        t.add_row(f"{name} cache hits / misses", f"{hm['hits']} / {hm['misses']}")
    t.add_row("flow-control waits", f"{s['flow_waits']} ({_fmt_t(s['flow_wait_time'])})")
    con.print(t)

    rows = run.lines()[:limit]
    t = Table(title="Compute — time per source line (attributed = weighted share of each "
              "fused kernel; measured = kernels containing the line)")
    t.add_column("source line", no_wrap=True, overflow="fold")
    t.add_column("code", overflow="fold")
    t.add_column("attributed", justify="right")
    t.add_column("measured", justify="right")
    t.add_column("ops", justify="right")
    t.add_column("kernels", justify="right")
    if other is not None:
        t.add_column(f"attributed in {compare}", justify="right")
        t.add_column("change", justify="right")
        oth = {r["line"]: r for r in other.lines()}
    for r in rows:
        cells = [r["line"], run.source(r["line"]), _fmt_t(r["attributed"]),
                 _fmt_t(r["measured"]), str(r["calls"]), str(r["kernels"])]
        if other is not None:
            o = oth.get(r["line"])
            ov = o["attributed"] if o else 0.0
            cells += [_fmt_t(ov), f"{(r['attributed'] - ov) * 1e3:+.2f} ms"]
        t.add_row(*cells)
    con.print(t)

    t = Table(title="I/O — bytes read and written by kernels; transfers between memories")
    t.add_column("what")
    t.add_column("bytes", justify="right")
    t.add_row("kernel reads", _fmt_b(s["bytes_in"]))
    t.add_row("kernel writes", _fmt_b(s["bytes_out"]))
    t.add_row("host → device", _fmt_b(s["to_device"]))
    t.add_row("device → host", _fmt_b(s["to_host"]))
    for r in sorted(run.lines(), key=lambda r: -r["bytes"])[:5]:
        if r["bytes"]:
            t.add_row(f"  {r['line']} (attributed)", _fmt_b(r["bytes"]))
    con.print(t)

    t = Table(title="Runtime / caches — per first call site of a trace")
    t.add_column("cache")
    t.add_column("call site")
    t.add_column("hits", justify="right")
    t.add_column("misses", justify="right")
    t.add_column("what changed (misses after a hit)")
    for (cache, lab), d in sorted(run.cache_sites().items(), key=lambda kv: -kv[1]["misses"]):
        t.add_row(cache, lab, str(d["hits"]), str(d["misses"]), "\n".join(d["changed"][:3]))
    con.print(t)

    if other is not None:
        so = other.summary()
        t = Table(title=f"Comparison — {path} vs {compare}")
        t.add_column("what")
        t.add_column(path, justify="right")
        t.add_column(compare, justify="right")
        t.add_column("ratio", justify="right")
        for k in ("wall", "kernel_time", "compile_time"):
            a, b = s[k], so[k]
            t.add_row(k.replace("_", " "), _fmt_t(a), _fmt_t(b), f"{a / b:.2f}x" if b else "-")
        for k in ("kernels", "compiles", "flushes", "ops_recorded"):
            t.add_row(k, str(s[k]), str(so[k]), f"{s[k] / so[k]:.2f}x" if so[k] else "-")
        con.print(t)
    return run


def chrome_trace(path, out):
    """Chrome Trace Event format: one track (tid) per executor, plus compile, flush and
    transfer tracks; opens in Perfetto or chrome://tracing."""
    run = Run(path)
    tracks = {}
    events = []

    def tid(name):
        if name not in tracks:
            tracks[name] = len(tracks) + 1
            events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tracks[name],
                           "args": {"name": name}})
        return tracks[name]

    events.append({"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                   "args": {"name": f"streamrt {run.path}"}})
    for k in run.kernels:
        lines = sorted(((run.label(s), w) for s, w in k["weights"].items()), key=lambda x: -x[1])
        events.append({"name": k["name"][:80], "cat": k["kind"], "ph": "X",
                       "ts": k["start"] * 1e6, "dur": max(k["dur"] * 1e6, 0.001), "pid": 1,
                       "tid": tid(f"executor {k['executor']}"),
                       "args": {"bytes_in": k["bytes_in"], "bytes_out": k["bytes_out"],
                                "elements": k["elements"],
                                "lines": {lab: round(w, 4) for lab, w in lines}}})
    for c in run.compiles:
        events.append({"name": f"{c['level']} {c['kernel']}", "cat": "compile", "ph": "X",
                       "ts": c["start"] * 1e6, "dur": max(c["dur"] * 1e6, 0.001), "pid": 1,
                       "tid": tid("compile")})
    for tr in run.transfers:
        events.append({"name": tr["direction"], "cat": "transfer", "ph": "X",
                       "ts": tr["start"] * 1e6, "dur": max(tr["dur"] * 1e6, 0.001), "pid": 1,
                       "tid": tid(f"transfers {tr['executor']}"), "args": {"bytes": tr["bytes"]}})
    for w in run.waits:
        events.append({"name": "flow-control wait", "cat": "wait", "ph": "X",
                       "ts": w["start"] * 1e6, "dur": max(w["dur"] * 1e6, 0.001), "pid": 1,
                       "tid": tid("application")})
    for f in run.flushes:
        events.append({"name": f"flush ({f['reason']})", "cat": "flush", "ph": "i", "s": "t",
                       "ts": f["start"] * 1e6, "pid": 1, "tid": tid("application"),
                       "args": {"entries": f["entries"], "programs": f["programs"],
                                "trace_cache_hit": f["hit"]}})
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, fh)
    return out


def html_report(path, out, limit=25):
    """A self-contained page (inline SVG and CSS, no scripts or network): bar chart of time
    per source line and a kernel timeline."""
    run = Run(path)
    s = run.summary()
    rows = run.lines()[:limit]
    e = html.escape
    top = max([r["attributed"] for r in rows] + [1e-12])
    bar_h, w = 22, 900
    bars = []
    for i, r in enumerate(rows):
        bw = max(1.0, 560 * r["attributed"] / top)
        y = i * bar_h
        bars.append(f'<text x="0" y="{y + 15}" class="lab">{e(r["line"][-48:])}</text>'
                    f'<rect x="330" y="{y + 3}" width="{bw:.1f}" height="{bar_h - 6}" '
                    f'class="bar"><title>{e(r["line"])}: {_fmt_t(r["attributed"])}</title></rect>'
                    f'<text x="{335 + bw:.1f}" y="{y + 15}" class="val">'
                    f'{e(_fmt_t(r["attributed"]))}</text>')
    chart = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" '
             f'height="{max(1, len(rows)) * bar_h + 10}">{"".join(bars)}</svg>')
    ks = sorted(run.kernels, key=lambda k: k["start"])
    ex = sorted({k["executor"] for k in ks}) or ["cpu"]
    t0 = min([k["start"] for k in ks] + [0.0])
    t1 = max([k["start"] + k["dur"] for k in ks] + [t0 + 1e-9])
    span = max(t1 - t0, 1e-9)
    lane = {x: i for i, x in enumerate(ex)}
    rects = []
    for k in ks[:5000]:
        x = 120 + 760 * (k["start"] - t0) / span
        ww = max(0.5, 760 * k["dur"] / span)
        y = 10 + lane[k["executor"]] * 30
        rects.append(f'<rect x="{x:.2f}" y="{y}" width="{ww:.2f}" height="20" class="k">'
                     f'<title>{e(k["name"])} — {_fmt_t(k["dur"])}</title></rect>')
    labels = "".join(f'<text x="0" y="{24 + i * 30}" class="lab">{e(x)}</text>'
                     for x, i in lane.items())
    timeline = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" '
                f'height="{20 + 30 * len(ex)}">{labels}{"".join(rects)}</svg>')
    srows = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in [
        ("wall time", _fmt_t(s["wall"])), ("kernel time", _fmt_t(s["kernel_time"])),
        ("kernels run", str(s["kernels"])), ("ops recorded", str(s["ops_recorded"])),
        ("kernels compiled", f"{s['compiles']} ({_fmt_t(s['compile_time'])})"),
        ("kernels loaded from disk", str(s["disk_loads"]))])
    lrows = "".join(
        f"<tr><td>{e(r['line'])}</td><td>{e(_fmt_t(r['attributed']))}</td>"
        f"<td>{e(_fmt_t(r['measured']))}</td><td>{r['calls']}</td><td>{r['kernels']}</td></tr>"
        for r in rows)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>streamrt profile — {e(path)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; }}
.bar {{ fill: #4c78a8; }} .k {{ fill: #f58518; }}
.lab {{ font: 12px monospace; fill: #222; }} .val {{ font: 12px sans-serif; fill: #555; }}
</style></head><body>
<h1>streamrt profile</h1><p>{e(path)}</p>
<h2>Summary</h2><table>{srows}</table>
<h2>Time per source line (attributed)</h2>{chart}
<h2>Kernel timeline</h2>{timeline}
<h2>Source lines</h2>
<table><tr><th>line</th><th>attributed</th><th>measured</th><th>ops</th><th>kernels</th></tr>
{lrows}</table>
</body></html>
"""
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(page)
    return out
