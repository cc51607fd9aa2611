/* NumPy's own inner loops, called directly by the NumPy tier (part of streamrt.frontend._native).
 *
 * A ufunc call on small arrays spends most of its time in NumPy's dispatch -- the override
 * check, type resolution, the iterator, the error-state lookup -- and little in its loop:
 * ``a + b`` of 1,000 float64 costs ~380 ns, its loop ~100. For the common case the C path
 * calls the loop itself, on a new C-ordered result:
 *
 *   - a ufunc with one output and one or two inputs (no generalized ufunc);
 *   - its array operands exact ndarrays of one dtype (float64, float32 or int64), native and
 *     aligned, of one shape (no broadcasting), the others Python or NumPy scalars that NumPy
 *     would convert to that dtype (NEP 50: a Python float or int takes the array's dtype);
 *   - laid out so that NumPy's iterator hands the loop the same strides: every array
 *     C-contiguous (one call over all elements, as NumPy coalesces them), or 1-D (one call,
 *     its stride), or 2-D with contiguous rows (a call per row). Other 2-D layouts only for
 *     the ufuncs whose result does not depend on the path the loop takes (correctly rounded
 *     IEEE operations, comparisons, integer arithmetic): a transcendental loop may take a
 *     SIMD or a scalar path by its strides, and NumPy's iterator may reorder or buffer them.
 *
 * The loop is the ufunc's first whose inputs are exactly that dtype: NumPy's dispatch finds
 * the same exact match. A floating-point exception the loop raised (NumPy would warn or
 * raise, by np.errstate) or a Python error it set discards the result: NumPy's own call
 * then redoes it and reports as NumPy does. The values are NumPy's bit for bit
 * (tests/test_native.py compares every ufunc, dtype and layout). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL streamrt_native_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <numpy/ufuncobject.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "_loops.h"

long long n_direct;                     /* ufunc calls whose loop ran here */

#define DIRECT_FPE (FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID)
#define GIL_FREE_SIZE 16384             /* release the GIL for loops this long (NumPy: 500) */

typedef union { double d; float f; npy_int64 i; } Element;

/* ``v``, a scalar operand of a loop over type ``tn``, in ``*e`` as NumPy converts it for that
 * loop; 0 when NumPy would promote to another dtype or the conversion is not exact. */
static int scalar_operand(PyObject *v, int tn, Element *e) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyFloat_Type || (tn == NPY_DOUBLE && PyArray_IsScalar(v, Double))) {
        double d = t == &PyFloat_Type ? PyFloat_AS_DOUBLE(v) : PyArrayScalar_VAL(v, Double);
        if (tn == NPY_DOUBLE)
            e->d = d;
        else if (tn == NPY_FLOAT && !(isfinite(d) && fabs(d) > FLT_MAX))
            e->f = (float)d;        /* (a float64 beyond float32's range: NumPy decides) */
        else
            return 0;
        return 1;
    }
    if (tn == NPY_FLOAT && PyArray_IsScalar(v, Float)) {
        e->f = PyArrayScalar_VAL(v, Float);
        return 1;
    }
    if (t == &PyLong_Type) {
        int over = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &over);
        if (over || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        const long long exact = tn == NPY_FLOAT ? (1LL << 24) : (1LL << 53);
        if (tn == NPY_LONG)
            e->i = x;
        else if (tn != NPY_DOUBLE && tn != NPY_FLOAT)
            return 0;
        else if (x > exact || x < -exact)
            return 0;
        else if (tn == NPY_DOUBLE)
            e->d = (double)x;
        else
            e->f = (float)x;
        return 1;
    }
    return 0;
}

/* Whether ``uf``'s result is the same whatever path its loop takes (see the top). */
static const char *const exact_names[] = {
    "add", "subtract", "multiply", "divide", "true_divide", "negative", "positive",
    "absolute", "sqrt", "square", "maximum", "minimum", "fmax", "fmin", "equal", "not_equal",
    "less", "less_equal", "greater", "greater_equal", "floor", "ceil", "trunc", "rint",
    "copysign", "sign", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift",
    "floor_divide", "remainder", "fmod", "isnan", "isinf", "isfinite", "signbit", NULL};

static int path_independent(PyUFuncObject *uf) {
    static PyUFuncObject *seen[16];
    static char answer[16];
    static int next;
    for (int k = 0; k < 16; k++)
        if (seen[k] == uf)
            return answer[k];
    int yes = 0;
    for (int k = 0; exact_names[k] != NULL && uf->name != NULL; k++)
        if (strcmp(uf->name, exact_names[k]) == 0)
            yes = 1;
    seen[next] = uf;                    /* (NumPy's ufuncs live as long as NumPy) */
    answer[next] = (char)yes;
    next = (next + 1) % 16;
    return yes;
}

PyObject *direct_ufunc(PyObject *f, PyObject *const *hv, Py_ssize_t n) {
    if (Py_TYPE(f) != &PyUFunc_Type || n < 1 || n > 2)
        return NULL;
    PyUFuncObject *uf = (PyUFuncObject *)f;
    if (uf->nin != n || uf->nout != 1 || uf->core_enabled || uf->functions == NULL)
        return NULL;
    PyArrayObject *arr[2] = {NULL, NULL}, *a0 = NULL;
    int tn = -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (!PyArray_CheckExact(hv[k]))
            continue;
        PyArrayObject *a = (PyArrayObject *)hv[k];
        PyArray_Descr *d = PyArray_DESCR(a);
        if (!PyArray_ISNBO(d->byteorder) || !PyArray_ISALIGNED(a))
            return NULL;
        if (a0 == NULL) {
            a0 = a;
            tn = d->type_num;
            if (tn != NPY_DOUBLE && tn != NPY_FLOAT && tn != NPY_LONG)
                return NULL;
        } else if (d->type_num != tn || !PyArray_SAMESHAPE(a, a0)) {
            return NULL;
        }
        arr[k] = a;
    }
    if (a0 == NULL)
        return NULL;
    int nd = PyArray_NDIM(a0);
    if (nd > 2)
        for (Py_ssize_t k = 0; k < n; k++)
            if (arr[k] != NULL && !PyArray_IS_C_CONTIGUOUS(arr[k]))
                return NULL;
    /* rows: a call per row of a 2-D operand that is not C-contiguous */
    int rows = 0;
    if (nd == 2)
        for (Py_ssize_t k = 0; k < n; k++)
            if (arr[k] != NULL && !PyArray_IS_C_CONTIGUOUS(arr[k]))
                rows = 1;
    if (rows && !path_independent(uf))
        for (Py_ssize_t k = 0; k < n; k++)
            if (arr[k] != NULL && PyArray_STRIDE(arr[k], 1) != PyArray_ITEMSIZE(arr[k]))
                return NULL;
    Element sv[2];
    char *ptr[3];
    npy_intp steps[3], outer[3] = {0, 0, 0};
    for (Py_ssize_t k = 0; k < n; k++) {
        if (arr[k] != NULL) {
            ptr[k] = PyArray_BYTES(arr[k]);
            steps[k] = nd == 1 || rows ? PyArray_STRIDE(arr[k], nd - 1) : PyArray_ITEMSIZE(arr[k]);
            if (rows)
                outer[k] = PyArray_STRIDE(arr[k], 0);
        } else {
            if (!scalar_operand(hv[k], tn, &sv[k]))
                return NULL;
            ptr[k] = (char *)&sv[k];
            steps[k] = 0;
        }
    }
    int nargs = uf->nargs, i = 0;
    for (; i < uf->ntypes; i++) {
        const char *ty = uf->types + i * nargs;
        if (ty[0] == tn && (n < 2 || ty[1] == tn))
            break;
    }
    if (i == uf->ntypes || uf->functions[i] == NULL)
        return NULL;
    PyArray_Descr *od = PyArray_DescrFromType(uf->types[i * nargs + n]);
    if (od == NULL)
        return NULL;
    PyArrayObject *out = (PyArrayObject *)PyArray_NewFromDescr(
        &PyArray_Type, od, nd, PyArray_DIMS(a0), NULL, NULL, 0, NULL);
    if (out == NULL)
        return NULL;
    PyUFuncGenericFunction loop = uf->functions[i];
    void *data = uf->data == NULL ? NULL : uf->data[i];
    npy_intp size = PyArray_SIZE(a0);
    npy_intp count = rows ? PyArray_DIM(a0, 1) : size;
    npy_intp nrows = rows ? PyArray_DIM(a0, 0) : 1;
    ptr[n] = PyArray_BYTES(out);
    steps[n] = PyArray_ITEMSIZE(out);
    outer[n] = count * steps[n];
    PyThreadState *ts = size >= GIL_FREE_SIZE ? PyEval_SaveThread() : NULL;
    feclearexcept(DIRECT_FPE);
    for (npy_intp r = 0; r < nrows; r++) {
        loop(ptr, &count, steps, data);
        for (Py_ssize_t k = 0; k <= n; k++)
            ptr[k] += outer[k];
    }
    int fpe = fetestexcept(DIRECT_FPE);
    if (fpe)
        feclearexcept(DIRECT_FPE);
    if (ts != NULL)
        PyEval_RestoreThread(ts);
    if (fpe || PyErr_Occurred()) {      /* NumPy's call redoes it and reports as it does */
        PyErr_Clear();
        Py_DECREF(out);
        return NULL;
    }
    n_direct++;
    return (PyObject *)out;
}

int direct_init(void) {
    import_umath1(-1);
    return 0;
}
