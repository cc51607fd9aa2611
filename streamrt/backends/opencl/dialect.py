"""OpenCL C: the C renderer's dialect for the OpenCL backend (c_render.Dialect)."""
from __future__ import annotations

from ..c_render import Dialect


class OpenCL(Dialect):
    name = "opencl"
    small_int_types = {"i8": "char", "i16": "short", "u16": "ushort"}
    u8_typedef = "typedef uchar u8;\n"
    prelude = """\
typedef long i64;
typedef ulong u64;
typedef int i32;
typedef uint u32;
typedef uchar u8;
#define SR_KERNEL __kernel void
#define SR_FN static inline
#define SR_GLOBAL __global
#define SR_LOCAL __local
#define SR_GID ((i64)get_global_id(0))
#define SR_GSIZE ((i64)get_global_size(0))
#define SR_LID ((i64)get_local_id(0))
#define SR_LSIZE ((i64)get_local_size(0))
#define SR_GRP ((i64)get_group_id(0))
#define SR_NGRP ((i64)get_num_groups(0))
#define SR_BARRIER barrier(CLK_LOCAL_MEM_FENCE)
#define SR_INF_F INFINITY
#define SR_NAN_F NAN
#define SR_INF_D ((double)INFINITY)
#define SR_NAN_D ((double)NAN)
"""
    fp64_pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    rng_prefix = "#pragma OPENCL FP_CONTRACT OFF\n"


DIALECT = OpenCL()
