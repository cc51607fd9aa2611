/* _loops.c: NumPy's inner loops called directly by the NumPy tier (see there). */
#ifndef STREAMRT_LOOPS_H
#define STREAMRT_LOOPS_H
#include <Python.h>

/* ufunc ``f`` of host values ``hv`` (n of them) computed by its own loop: into a new ndarray,
 * or into ndarray ``into`` (an in-place operator: one of hv is ``into``), which comes back
 * (new refs). NULL without an error when the call is not one _loops.c takes: NumPy's call
 * then runs (``into`` untouched); NULL with an error: what NumPy's in-place call raises
 * (np.errstate), ``into`` written as NumPy's call writes it. */
PyObject *direct_ufunc(PyObject *f, PyObject *const *hv, Py_ssize_t n, PyObject *into);
/* fn(x) of NumPy's whole-array reductions (np.sum, ndarray.max, ...) by the ufunc's loop: a
 * NumPy scalar, or NULL without an error (NumPy's call then runs). */
PyObject *direct_reduce(PyObject *fn, PyObject *x);
/* base[key] = value for a basic key, by memmove when value is an ndarray of the view's
 * dtype and shape or a number into a float64/int64 view: 1 done, 0 not taken (NumPy's
 * setitem then runs), -1 error (NumPy's indexing raised). */
int direct_setitem(PyObject *base, PyObject *key, PyObject *value);
/* base[key] for a key of one int64 index vector per axis, all of one length: a new 1-D
 * array of the same elements as NumPy's gather; NULL without an error -> NumPy's call. */
PyObject *direct_gather(PyObject *base, PyObject *key);
/* base[key] = value for such a key and an ndarray value of base's dtype and the key's length
 * that shares no memory with base: 1 done, 0 not taken (NumPy's setitem then runs). */
int direct_scatter(PyObject *base, PyObject *key, PyObject *value);
/* The byte range [*lo, *hi) ndarray ``a``'s elements span (empty: *lo == *hi). */
void array_extent(PyArrayObject *a, char **lo, char **hi);
int direct_init(void);          /* NumPy's ufunc API (once, at the module's import): -1 error */
extern long long n_direct;      /* calls whose loop ran there */
extern Py_ssize_t split_min;     /* loops this long or longer run on two threads (0: never) */
extern long long n_split;       /* loops cut in two */
extern long long n_split_lost;  /* ... whose helper half ended late (the next ran on one thread) */
void split_reset(void);         /* forget the backing off of cut loops that lost */
void split_park(void);          /* the helper thread stops spinning until the next cut loop */
extern int split_skip, split_backoff;   /* loops left to run on one thread; the next wait */
extern int split_delay_us;      /* tests: the helper sleeps this long before its part */
extern int split_wait;          /* 1: the helper runs its part, never taken back (tests) */
extern _Thread_local int split_paused;  /* 1: this thread's loops are not cut */

#endif
