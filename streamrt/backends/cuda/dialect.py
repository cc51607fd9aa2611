"""CUDA C: the C renderer's dialect for the CUDA backend (c_render.Dialect)."""
from __future__ import annotations

from ..c_render import Dialect


class CUDA(Dialect):
    name = "cuda"
    small_int_types = {"i8": "signed char", "i16": "short", "u16": "unsigned short"}
    u8_typedef = "typedef unsigned char u8;\n"
    prelude = """\
typedef long long i64;
typedef unsigned long long u64;
typedef int i32;
typedef unsigned int u32;
typedef unsigned char u8;
#define SR_KERNEL extern "C" __global__ void
#define SR_FN static __device__ __forceinline__
#define SR_GLOBAL
#define SR_LOCAL __shared__
#define SR_GID ((i64)blockIdx.x * (i64)blockDim.x + (i64)threadIdx.x)
#define SR_GSIZE ((i64)gridDim.x * (i64)blockDim.x)
#define SR_LID ((i64)threadIdx.x)
#define SR_LSIZE ((i64)blockDim.x)
#define SR_GRP ((i64)blockIdx.x)
#define SR_NGRP ((i64)gridDim.x)
#define SR_BARRIER __syncthreads()
#define SR_INF_F __int_as_float(0x7f800000)
#define SR_NAN_F __int_as_float(0x7fffffff)
#define SR_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define SR_NAN_D __longlong_as_double(0x7ff8000000000000LL)
"""
    float_suffix = "f"                  # expf, logf, ... (OpenCL overloads exp, log, ...)
    exact_mul = "__dmul_rn((a), (b))"


DIALECT = CUDA()
