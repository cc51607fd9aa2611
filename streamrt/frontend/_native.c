/* streamrt.frontend._native: the record path of the hot operators in C -- an Array operator or a
 * one-operand map function call in, the same port, work-queue entry, trace-key entry and
 * Array the Python path (frontend/array.py, scheduler/workqueue.py, caches/keys.py) makes
 * out.
 *
 * Only the common case is here: an Array (op) Array of the same shape or (op) a Python
 * float/int whose dtype combination the Python path has validated before (its memo dicts),
 * called from user code, with no piecewise (rolled) operand, no debugger hook, below the
 * queue threshold.  Everything else calls the Python implementation, which stays the
 * definition: the C code must make exactly what it makes (tests/test_native.py compares).
 *
 * Ports, Arrays, call sites and work queues are Python classes with __slots__; their
 * slots are read and written at the offsets of the classes' member descriptors, looked up
 * once in configure().  Nothing here releases the GIL, so a record is atomic with respect
 * to other Python threads except for the work queue's lock, which is taken as the Python
 * path takes it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL streamrt_native_ARRAY_API      /* (shared with _loops.c) */
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

#include "_loops.h"

#if PY_VERSION_HEX < 0x030B0000
static int PyFrame_GetLasti(PyFrameObject *f) {
    return f->f_lasti < 0 ? -1 : f->f_lasti * (int)sizeof(_Py_CODEUNIT);
}
#endif

/* ---- configuration (set once by configure()) ------------------------------------------ */
static int configured = 0;
static int enabled = 0;      /* configured and switched on (enable()) */
static long long n_native;   /* ops recorded here (ps.runtime_stats()["ops_recorded_native"]) */
static PyTypeObject *ArrayType, *PortType, *SiteType, *QueueType;
static Py_ssize_t A_port, A_value, A_base;
static Py_ssize_t P_id, P_kind, P_op, P_dtype, P_shape, P_inputs, P_params, P_site, P_queue,
    P_value, P_state, P_error, P_nrefs, P_scalar, P_loop_dtype, P_ref, P_holders, P_captured,
    P_eager_views, P_counted;
static Py_ssize_t S_code, S_lasti, S_lineno, S_now;
static Py_ssize_t Q_entries, Q_lock, Q_pending, Q_keyparts, Q_kports, Q_num, Q_recorded,
    Q_max_elements, Q_shape, Q_limit, Q_epoch, Q_follow, Q_fpos, Q_recording, Q_eager_limit;
static PyObject *refs;           /* the NumPy tier: op name -> NumPy reference (ops.OPS.ref) */
static PyObject *capture_more;   /* tiers.capture: a computed base read by a second queue */
static PyObject *ufunc_ops;      /* NumPy ufunc -> op name (ops.UFUNC_TO_OP by object) */
static PyObject *supported;      /* dtypes.SUPPORTED_SET */
static PyObject *elidable;       /* ops whose float result may reuse a dying operand's buffer */
static PyObject *s_out_kw;       /* ("out",) */
static PyObject *materialize;    /* array._materialize: the port of a NumPy-tier Array */
static long long n_eager;        /* ops the C path ran on the NumPy tier */
static Py_ssize_t now_elements;  /* cscheduler.WRITE_NOW_ELEMENTS (configure) */
static PyObject *ids;            /* itertools.count: port ids, shared with Port.__init__ */
static PyObject *internal;       /* errors._INTERNAL: code -> True (streamrt/NumPy) / False */
static PyObject *fast_memo;      /* array._FAST: (op, dtype, dtype-or-kind, reflected) -> dts */
static PyObject *ufast_memo;     /* array._UFAST: (op, dtype) -> (out, loop) dtypes */
static PyObject *piecewise;      /* pieces.PIECEWISE.data: an operand in it -> the Python path */
static PyObject *hooks_dict;     /* core/hooks.py module dict (on_record) */
static PyObject *current_queue;  /* workqueue.current_queue */
static PyObject *settings;       /* config.settings (queue_threshold) */
static PyObject *iinfo;          /* array._IINFO: dtype -> (min, max) */
static PyObject *enqueue_plain;  /* array._enqueue_plain: the Python enqueue */
static PyObject *register_alias; /* indexing.register: an Array reads a base (aliases) */
static PyObject *product_serve;  /* runtime/products.serve: products of a loop, in blocks */
static PyObject *product_refs;   /* (np.matmul, np.dot): the functions it serves */
static Py_ssize_t product_min;   /* products.MIN_ELEMENTS */
static PyObject *key_external;   /* keys._external */
static PyObject *weak_f, *weak_i;/* the params of a Python float / int operand's port */
static PyObject *s_map, *s_scalar, *s_view, *s_const, *s_compute, *s_f, *s_i, *s_S, *s_power,
    *s_multiply,
    *s_on_record, *s_queue_threshold, *s_queue_key, *s_eager_elements, *s_batch_products;
static PyObject *st_new, *st_done, *st_submitted, *st_dead, *zero, *empty;

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

static inline void set_slot(PyObject *o, Py_ssize_t off, PyObject *v) {
    PyObject *old = SLOT(o, off);
    Py_INCREF(v);
    SLOT(o, off) = v;
    Py_XDECREF(old);
}

/* a == the interned string ``interned``: two interned strings are equal only if identical,
 * as Python's string literals (the ports' kinds and ops) are */
static inline int streq(PyObject *a, PyObject *interned) {
    return a == interned ||
           (a != NULL && PyUnicode_CheckExact(a) && !PyUnicode_CHECK_INTERNED(a) &&
            PyUnicode_Compare(a, interned) == 0);
}

static int slot_offset(PyTypeObject *tp, const char *name, Py_ssize_t *out) {
    PyObject *d = PyDict_GetItemString(tp->tp_dict, name);
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a __slots__ member", tp->tp_name, name);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    if (m->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%s.%s: unexpected member type", tp->tp_name, name);
        return -1;
    }
    *out = m->offset;
    return 0;
}

/* ---- call sites ------------------------------------------------------------------------ */
/* A few recently used code objects (held) with their call sites by bytecode offset: a loop
 * records from one or two functions, and hashing a code object (the key of errors._INTERNAL)
 * costs more than the rest of a lookup. */
#define NCODES 8
static struct { PyObject *code; PyObject *per; } codes[NCODES];
/* Every user code object's sites by offset, behind those few (errors._SITES, shared with the
 * Python path's errors.site_at): a site is one object for the life of its line (CallSite.now
 * stays on it), up to MAXCODES code objects (errors.MAX_SITE_CODES). */
static PyObject *user_codes;
static Py_ssize_t maxcodes;

/* The user's call site of the op being recorded, if the calling frame is user code known to
 * errors._INTERNAL (else NULL without an error: the Python path walks the frames). New ref. */
static PyObject *user_site(void) {
    PyFrameObject *f = PyEval_GetFrame();
    if (f == NULL)
        return NULL;
    PyCodeObject *code = PyFrame_GetCode(f);
    size_t h = ((size_t)code >> 6) % NCODES;
    PyObject *per = codes[h].per;
    if (codes[h].code != (PyObject *)code) {
        per = PyDict_GetItemWithError(user_codes, (PyObject *)code);
        if (per != NULL) {
            Py_INCREF(per);
        } else {
            PyObject *intl = PyErr_Occurred() ? NULL :
                PyDict_GetItemWithError(internal, (PyObject *)code);
            if (intl != Py_False) {          /* streamrt's own code, or not seen yet */
                Py_DECREF(code);
                return NULL;
            }
            if (PyDict_GET_SIZE(user_codes) >= maxcodes)
                PyDict_Clear(user_codes);
            per = PyDict_New();
            if (per == NULL || PyDict_SetItem(user_codes, (PyObject *)code, per) < 0) {
                Py_XDECREF(per);
                Py_DECREF(code);
                return NULL;
            }
        }
        Py_XSETREF(codes[h].per, per);
        Py_XSETREF(codes[h].code, Py_NewRef((PyObject *)code));
    }
    Py_DECREF(code);      /* (held by codes[h]) */
    PyObject *li = PyLong_FromLong(PyFrame_GetLasti(f));
    if (li == NULL)
        return NULL;
    PyObject *s = PyDict_GetItemWithError(per, li);
    if (s != NULL) {
        Py_INCREF(s);
    } else if (!PyErr_Occurred()) {
        s = SiteType->tp_alloc(SiteType, 0);
        if (s != NULL) {
            set_slot(s, S_code, codes[h].code);
            set_slot(s, S_lasti, li);
            set_slot(s, S_lineno, Py_None);
            set_slot(s, S_now, Py_False);
            if (PyDict_SetItem(per, li, s) < 0)
                Py_CLEAR(s);
        }
    }
    Py_DECREF(li);
    return s;
}

/* ---- ports and Arrays ------------------------------------------------------------------ */
static PyObject *new_port(PyObject *kind, PyObject *op, PyObject *dtype, PyObject *shape,
                          PyObject *inputs, PyObject *params, PyObject *site,
                          PyObject *scalar, PyObject *loop_dtype, PyObject *state) {
    PyObject *id = Py_TYPE(ids)->tp_iternext(ids);
    if (id == NULL)
        return NULL;
    PyObject *p = PortType->tp_alloc(PortType, 0);
    if (p == NULL) {
        Py_DECREF(id);
        return NULL;
    }
    SLOT(p, P_id) = id;
    set_slot(p, P_kind, kind);
    set_slot(p, P_op, op);
    set_slot(p, P_dtype, dtype);
    set_slot(p, P_shape, shape);
    set_slot(p, P_inputs, inputs);
    set_slot(p, P_params, params);
    set_slot(p, P_site, site);
    set_slot(p, P_queue, Py_None);
    set_slot(p, P_value, Py_None);
    set_slot(p, P_scalar, scalar);
    set_slot(p, P_loop_dtype, loop_dtype);
    set_slot(p, P_error, Py_None);
    set_slot(p, P_ref, Py_None);
    set_slot(p, P_nrefs, zero);
    set_slot(p, P_holders, Py_None);
    set_slot(p, P_captured, Py_None);
    set_slot(p, P_eager_views, zero);
    set_slot(p, P_counted, Py_False);
    set_slot(p, P_state, state);
    return p;
}

/* Arrays that died, kept for the next (array_dealloc): exact Arrays only, untracked, their
 * slots cleared, each still holding its reference to the type. CPython keeps such lists for
 * its own small objects; an Array dies with nearly every op on the NumPy tier. */
#if PY_VERSION_HEX < 0x030D0000
#define NFREE 64
static PyObject *free_arrays[NFREE];
static int n_free = 0;
#else
#define NFREE 0         /* (_Py_NewReference is not exported from 3.13) */
static int n_free = 0;
#endif

static PyObject *new_array_object(void) {
#if NFREE > 0
    if (n_free > 0) {
        PyObject *a = free_arrays[--n_free];
        _Py_NewReference(a);
        PyObject_GC_Track(a);
        return a;
    }
#endif
    return ArrayType->tp_alloc(ArrayType, 0);
}

/* The value of a port's count (a Python int, small: the Arrays holding the port), read
 * without PyLong_AsLong's general path where the int's layout is known (CPython 3.11:
 * a sign-carrying size and 30-bit digits); -1 with an error set otherwise. */
static inline long count_value(PyObject *n) {
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
    /* (3.11: PyLongObject's layout is in Python.h, cpython/longintrepr.h) */
    if (PyLong_CheckExact(n)) {
        Py_ssize_t size = Py_SIZE(n);
        if (size == 0)
            return 0;
        if (size == 1)
            return (long)((PyLongObject *)n)->ob_digit[0];
        if (size == -1)
            return -(long)((PyLongObject *)n)->ob_digit[0];
    }
#endif
    return PyLong_AsLong(n);
}

static int add_nrefs(PyObject *port, long d) {
    PyObject *n = SLOT(port, P_nrefs);
    long v = n != NULL ? count_value(n) : 0;
    if (v == -1 && PyErr_Occurred())
        return -1;
    PyObject *m = PyLong_FromLong(v + d);
    if (m == NULL)
        return -1;
    PyObject *old = SLOT(port, P_nrefs);
    SLOT(port, P_nrefs) = m;
    Py_XDECREF(old);
    return 0;
}

static int add_int_slot(PyObject *o, Py_ssize_t off, long d) {
    long v = count_value(SLOT(o, off));
    if (v == -1 && PyErr_Occurred())
        return -1;
    PyObject *m = PyLong_FromLong(v + d);
    if (m == NULL)
        return -1;
    set_slot(o, off, m);
    Py_DECREF(m);
    return 0;
}

/* array._wrap: a new Array referring to ``port`` (steals nothing). */
static PyObject *wrap(PyObject *port) {
    PyObject *a = new_array_object();
    if (a == NULL)
        return NULL;
    if (add_nrefs(port, 1) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    set_slot(a, A_port, port);
    set_slot(a, A_value, Py_None);
    set_slot(a, A_base, Py_None);
    return a;
}

/* slot ``off`` of ``o``, None for an unset slot (borrowed) */
static inline PyObject *slot_or_none(PyObject *o, Py_ssize_t off) {
    PyObject *v = SLOT(o, off);
    return v != NULL ? v : Py_None;
}

/* The port of an Array (borrowed): a NumPy-tier Array gets one now (array._materialize). */
static PyObject *port_of(PyObject *a) {
    PyObject *p = SLOT(a, A_port);
    if (p != NULL && p != Py_None)
        return p;
    PyObject *r = PyObject_CallOneArg(materialize, a);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);                       /* (held by the Array) */
    return SLOT(a, A_port);
}

/* ---- the work queue's lock ---------------------------------------------------------------- */
/* A reentrant lock like threading.RLock whose C side (lock_enter/lock_exit) the record path
 * takes without a method call: RLock.acquire parses its arguments on every call, which cost
 * as much as the rest of recording an entry. */
#include <pythread.h>
typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    unsigned long owner;
    long count;
} QueueLock;

static int lock_enter(QueueLock *l, int blocking) {
    unsigned long me = PyThread_get_thread_ident();
    if (l->count > 0 && l->owner == me) {
        l->count++;
        return 1;
    }
    if (!PyThread_acquire_lock(l->lock, NOWAIT_LOCK)) {
        if (!blocking)
            return 0;
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(l->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    l->owner = me;
    l->count = 1;
    return 1;
}

static int lock_exit(QueueLock *l) {
    if (l->count <= 0 || l->owner != PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "cannot release un-acquired lock");
        return -1;
    }
    if (--l->count == 0) {
        l->owner = 0;
        PyThread_release_lock(l->lock);
    }
    return 0;
}

static PyObject *qlock_acquire(QueueLock *l, PyObject *const *args, Py_ssize_t n) {
    int blocking = 1;
    if (n > 1) {
        PyErr_SetString(PyExc_TypeError, "acquire(blocking=True)");
        return NULL;
    }
    if (n == 1 && (blocking = PyObject_IsTrue(args[0])) < 0)
        return NULL;
    return PyBool_FromLong(lock_enter(l, blocking));
}

static PyObject *qlock_release(QueueLock *l, PyObject *Py_UNUSED(unused)) {
    if (lock_exit(l) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *qlock_exit(QueueLock *l, PyObject *const *Py_UNUSED(args),
                            Py_ssize_t Py_UNUSED(n)) {
    return qlock_release(l, NULL);
}

static PyObject *qlock_is_owned(QueueLock *l, PyObject *Py_UNUSED(unused)) {
    return PyBool_FromLong(l->count > 0 && l->owner == PyThread_get_thread_ident());
}

static PyObject *qlock_new(PyTypeObject *tp, PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kw)) {
    QueueLock *l = (QueueLock *)tp->tp_alloc(tp, 0);
    if (l == NULL)
        return NULL;
    l->lock = PyThread_allocate_lock();
    if (l->lock == NULL) {
        Py_DECREF(l);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate lock");
        return NULL;
    }
    return (PyObject *)l;
}

static void qlock_dealloc(QueueLock *l) {
    if (l->lock != NULL) {
        if (l->count > 0)
            PyThread_release_lock(l->lock);
        PyThread_free_lock(l->lock);
    }
    Py_TYPE(l)->tp_free((PyObject *)l);
}

static PyMethodDef qlock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))qlock_acquire, METH_FASTCALL, "acquire(blocking=True)"},
    {"release", (PyCFunction)qlock_release, METH_NOARGS, "release()"},
    {"__enter__", (PyCFunction)(void (*)(void))qlock_acquire, METH_FASTCALL, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))qlock_exit, METH_FASTCALL, NULL},
    {"_is_owned", (PyCFunction)qlock_is_owned, METH_NOARGS, NULL},
    {NULL}};

static PyTypeObject QueueLockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "streamrt.frontend._native.QueueLock",
    .tp_basicsize = sizeof(QueueLock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A work queue's reentrant lock (threading.RLock's methods), cheap from C.",
    .tp_new = qlock_new,
    .tp_dealloc = (destructor)qlock_dealloc,
    .tp_methods = qlock_methods,
};

/* ---- the work queue -------------------------------------------------------------------- */
static PyObject *call_enqueue(PyObject *port) {
    return PyObject_CallOneArg(enqueue_plain, port);
}

/* keys._external for a scalar operand (the only kind the C path makes); others in Python. */
static PyObject *external(PyObject *i, PyObject *num, PyObject *kports) {
    if (!streq(SLOT(i, P_kind), s_scalar))
        return PyObject_CallFunctionObjArgs(key_external, i, num, kports, NULL);
    PyObject *n = PyLong_FromSsize_t(PyList_GET_SIZE(kports));
    if (n == NULL)
        return NULL;
    if (PyDict_SetItem(num, SLOT(i, P_id), n) < 0 || PyList_Append(kports, i) < 0) {
        Py_DECREF(n);
        return NULL;
    }
    Py_DECREF(n);
    return PyTuple_Pack(3, s_S, SLOT(i, P_dtype), SLOT(i, P_params));
}

/* keys.trace_entry, in two steps: the numbering (the inputs not numbered yet, then the port
 * itself), and the entry -- built, or compared with the followed trace's entry without
 * building it (WorkQueue.follow). */
#define MAXINS 8

/* vals[k]: the number or external descriptor of input k (new refs); 0 or -1 */
static int number_inputs(PyObject *port, PyObject *num, PyObject *kports, PyObject **vals,
                         Py_ssize_t n) {
    PyObject *inputs = SLOT(port, P_inputs);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *i = PyTuple_GET_ITEM(inputs, k);
        PyObject *x = PyDict_GetItemWithError(num, SLOT(i, P_id));
        if (x != NULL)
            Py_INCREF(x);
        else if (PyErr_Occurred() || (x = external(i, num, kports)) == NULL) {
            while (k-- > 0)
                Py_DECREF(vals[k]);
            return -1;
        }
        vals[k] = x;
    }
    PyObject *pos = PyLong_FromSsize_t(PyList_GET_SIZE(kports));
    int rc = pos == NULL || PyDict_SetItem(num, SLOT(port, P_id), pos) < 0 ||
             PyList_Append(kports, port) < 0 ? -1 : 0;
    Py_XDECREF(pos);
    if (rc < 0)
        for (Py_ssize_t k = 0; k < n; k++)
            Py_DECREF(vals[k]);
    return rc;
}

/* the port's params as they enter the key (keys._hashable); new ref */
static PyObject *key_params(PyObject *params) {
    int truth = PyObject_IsTrue(params);
    if (truth < 0)
        return NULL;
    if (truth && PyObject_Hash(params) == -1) {
        PyErr_Clear();
        return PyObject_Repr(params);
    }
    return Py_NewRef(params);
}

/* the entry (steals vals) */
static PyObject *build_entry(PyObject *port, PyObject **vals, Py_ssize_t n) {
    PyObject *ins = PyTuple_New(n);
    if (ins == NULL) {
        for (Py_ssize_t k = 0; k < n; k++)
            Py_DECREF(vals[k]);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++)
        PyTuple_SET_ITEM(ins, k, vals[k]);
    PyObject *site = SLOT(port, P_site);
    PyObject *hp = key_params(SLOT(port, P_params));
    PyObject *cid = PyLong_FromVoidPtr(SLOT(site, S_code));
    PyObject *e = hp == NULL || cid == NULL ? NULL : PyTuple_New(9);
    if (e == NULL) {
        Py_XDECREF(hp);
        Py_XDECREF(cid);
        Py_DECREF(ins);
        return NULL;
    }
    PyTuple_SET_ITEM(e, 0, cid);
    PyTuple_SET_ITEM(e, 1, Py_NewRef(SLOT(site, S_lasti)));
    PyTuple_SET_ITEM(e, 2, Py_NewRef(SLOT(port, P_kind)));
    PyTuple_SET_ITEM(e, 3, Py_NewRef(SLOT(port, P_op)));
    PyTuple_SET_ITEM(e, 4, hp);
    PyTuple_SET_ITEM(e, 5, Py_NewRef(SLOT(port, P_dtype)));
    PyTuple_SET_ITEM(e, 6, Py_NewRef(SLOT(port, P_shape)));
    PyTuple_SET_ITEM(e, 7, Py_NewRef(SLOT(port, P_loop_dtype)));
    PyTuple_SET_ITEM(e, 8, ins);
    return e;
}

static inline int eq(PyObject *a, PyObject *b) {
    return a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
}

/* whether ``e`` is the entry build_entry would make (1 / 0 / -1) */
static int entry_matches(PyObject *e, PyObject *port, PyObject **vals, Py_ssize_t n) {
    if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 9)
        return 0;
    PyObject *site = SLOT(port, P_site);
    PyObject *e0 = PyTuple_GET_ITEM(e, 0), *ins = PyTuple_GET_ITEM(e, 8);
    if (!PyLong_CheckExact(e0) || PyLong_AsVoidPtr(e0) != (void *)SLOT(site, S_code))
        return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_CheckExact(ins) || PyTuple_GET_SIZE(ins) != n)
        return 0;
    int r;
#define EQ(a, b) if ((r = eq(a, b)) <= 0) return r
    EQ(PyTuple_GET_ITEM(e, 1), SLOT(site, S_lasti));
    EQ(PyTuple_GET_ITEM(e, 2), SLOT(port, P_kind));
    EQ(PyTuple_GET_ITEM(e, 3), SLOT(port, P_op));
    EQ(PyTuple_GET_ITEM(e, 5), SLOT(port, P_dtype));
    EQ(PyTuple_GET_ITEM(e, 6), SLOT(port, P_shape));
    EQ(PyTuple_GET_ITEM(e, 7), SLOT(port, P_loop_dtype));
    for (Py_ssize_t k = 0; k < n; k++) {
        EQ(PyTuple_GET_ITEM(ins, k), vals[k]);
    }
    PyObject *hp = key_params(SLOT(port, P_params));
    if (hp == NULL)
        return -1;
    r = eq(PyTuple_GET_ITEM(e, 4), hp);
    Py_DECREF(hp);
    return r;
#undef EQ
}

static PyObject *follow_table;   /* trace_cache.get().follow: first call site -> KParts */

/* The key entry of ``port`` into the queue's key: WorkQueue.compute's part under the lock.
 * (The key list and the followed entries are held while used: a comparison may run Python
 * code -- a collection's finalizers -- that records on this queue.) */
static int key_entry(PyObject *q, PyObject *port) {
    PyObject *vals[MAXINS];
    Py_ssize_t n = PyTuple_GET_SIZE(SLOT(port, P_inputs));
    if (n > MAXINS) {
        PyErr_SetString(PyExc_ValueError, "too many inputs");
        return -1;
    }
    if (number_inputs(port, SLOT(q, Q_num), SLOT(q, Q_kports), vals, n) < 0)
        return -1;
    int rc = -1;
    PyObject *kp = Py_NewRef(SLOT(q, Q_keyparts));
    PyObject *f = Py_NewRef(SLOT(q, Q_follow));
    if (f == Py_None && PyList_GET_SIZE(kp) == 0 && PyList_GET_SIZE(SLOT(q, Q_entries)) == 1) {
        /* the queue's first entry: the trace cache's candidate for this first call site */
        PyObject *site = SLOT(port, P_site);
        PyObject *first = Py_BuildValue("(NO)", PyLong_FromVoidPtr(SLOT(site, S_code)),
                                        SLOT(site, S_lasti));
        PyObject *cand = first == NULL ? NULL : PyDict_GetItemWithError(follow_table, first);
        Py_XDECREF(first);
        if (cand != NULL && PyTuple_Check(cand) && PyTuple_GET_SIZE(cand) > 0) {
            set_slot(q, Q_follow, cand);
            set_slot(q, Q_fpos, zero);
            Py_SETREF(f, Py_NewRef(cand));
        } else if (PyErr_Occurred()) {
            goto done;
        }
    }
    if (f != Py_None) {
        long fpos = PyLong_AsLong(SLOT(q, Q_fpos));
        if (fpos == -1 && PyErr_Occurred())
            goto done;
        int m = fpos < PyTuple_GET_SIZE(f) ?
            entry_matches(PyTuple_GET_ITEM(f, fpos), port, vals, n) : 0;
        if (m < 0)
            goto done;
        if (m) {
            PyObject *np = PyLong_FromLong(fpos + 1);
            if (np == NULL)
                goto done;
            set_slot(q, Q_fpos, np);
            Py_DECREF(np);
            rc = 0;
            goto done;
        }
        /* a difference: the matched prefix becomes the key's entries (WorkQueue._unfollow) */
        PyObject *pre = PyTuple_GetSlice(f, 0, fpos);
        if (pre == NULL || PyList_SetSlice(kp, 0, 0, pre) < 0) {
            Py_XDECREF(pre);
            goto done;
        }
        Py_DECREF(pre);
        set_slot(q, Q_follow, Py_None);
        set_slot(q, Q_fpos, zero);
    }
    PyObject *e = build_entry(port, vals, n);       /* (takes the references in vals) */
    n = 0;
    if (e != NULL) {
        rc = PyList_Append(kp, e);
        Py_DECREF(e);
    }
done:
    for (Py_ssize_t k = 0; k < n; k++)
        Py_DECREF(vals[k]);
    Py_DECREF(kp);
    Py_DECREF(f);
    return rc;
}

/* WorkQueue.compute without the debugger hook (checked by the caller); 0 or -1. */
static int compute(PyObject *q, PyObject *port) {
    PyObject *shape = SLOT(port, P_shape);
    if (shape != SLOT(q, Q_shape)) {
        set_slot(q, Q_shape, shape);
        long long n = 1;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(shape); k++) {
            long long s = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, k));
            if (s == -1 && PyErr_Occurred())
                return -1;
            n *= s;
        }
        PyObject *mx = SLOT(q, Q_max_elements);
        long long m = PyLong_AsLongLong(mx);
        if (m == -1 && PyErr_Occurred())
            return -1;
        if (n > m) {
            PyObject *v = PyLong_FromLongLong(n);
            if (v == NULL)
                return -1;
            set_slot(q, Q_max_elements, v);
            Py_DECREF(v);
        }
    }
    QueueLock *lock = (QueueLock *)SLOT(q, Q_lock);     /* (checked by enqueue) */
    lock_enter(lock, 1);
    int rc = -1;
    PyObject *entry = PyTuple_Pack(2, s_compute, port);
    if (entry == NULL || PyList_Append(SLOT(q, Q_entries), entry) < 0)
        goto done;
    long pend = PyLong_AsLong(SLOT(q, Q_pending));
    if (pend == -1 && PyErr_Occurred())
        goto done;
    PyObject *pv = PyLong_FromLong(pend + 1);
    if (pv == NULL)
        goto done;
    set_slot(q, Q_pending, pv);
    Py_DECREF(pv);
    if (SLOT(q, Q_keyparts) != Py_None && key_entry(q, port) < 0) {
        /* an unkeyable op: this flush is not cached (as the Python path) */
        PyErr_Clear();
        set_slot(q, Q_keyparts, Py_None);
        set_slot(q, Q_follow, Py_None);
    }
    rc = 0;
done:
    Py_XDECREF(entry);
    if (lock_exit(lock) < 0)
        rc = -1;
    if (rc == 0) {
        long rec = PyLong_AsLong(SLOT(q, Q_recorded));
        if (rec == -1 && PyErr_Occurred())
            return -1;
        PyObject *rv = PyLong_FromLong(rec + 1);
        if (rv == NULL)
            return -1;
        set_slot(q, Q_recorded, rv);
        Py_DECREF(rv);
    }
    return rc;
}

/* array._enqueue_plain: the port joins this thread's work queue, an Array of it comes back.
 * The unusual cases (no queue yet, an input from another thread's queue, the threshold) call
 * the Python function with the port as it is. */
static long epoch = 1;          /* bumped by settings_changed(): queues re-read their limit */

/* This thread's work queue (new ref): kept in the thread state's dict, which dies with the
 * thread (a threading.local lookup costs several times more); the first time from
 * workqueue.current_queue(), the Python path's. */
static PyObject *thread_queue(void) {
    PyObject *d = PyThreadState_GetDict();
    if (d != NULL) {
        PyObject *q = PyDict_GetItemWithError(d, s_queue_key);
        if (q != NULL)
            return Py_NewRef(q);
        if (PyErr_Occurred())
            return NULL;
    }
    PyObject *q = PyObject_CallNoArgs(current_queue);
    if (q != NULL && d != NULL && PyDict_SetItem(d, s_queue_key, q) < 0)
        Py_CLEAR(q);
    return q;
}

/* The queue's copies of its thread's settings (queue threshold, NumPy-tier limit), read
 * again after any setting changed (settings may differ per thread: config.override). */
static int refresh(PyObject *q) {
    long qe = PyLong_AsLong(SLOT(q, Q_epoch));
    if (qe == -1 && PyErr_Occurred())
        return -1;
    if (qe == epoch)
        return 0;
    PyObject *th = PyObject_GetAttr(settings, s_queue_threshold);
    PyObject *el = th == NULL ? NULL : PyObject_GetAttr(settings, s_eager_elements);
    PyObject *ep = PyLong_FromLong(epoch);
    if (th == NULL || el == NULL || ep == NULL) {
        Py_XDECREF(th);
        Py_XDECREF(el);
        Py_XDECREF(ep);
        return -1;
    }
    set_slot(q, Q_limit, th);
    set_slot(q, Q_eager_limit, el);
    set_slot(q, Q_epoch, ep);
    Py_DECREF(th);
    Py_DECREF(el);
    Py_DECREF(ep);
    return 0;
}

/* tiers.capture: the computed bases ``port`` reads are marked captured by queue ``q`` (an
 * in-place write waits for q's work first); a second queue goes through Python. */
static int capture(PyObject *port, PyObject *q) {
    PyObject *inputs = SLOT(port, P_inputs);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(inputs); k++) {
        PyObject *b = PyTuple_GET_ITEM(inputs, k);
        if (streq(SLOT(b, P_kind), s_view))
            b = PyTuple_GET_ITEM(SLOT(b, P_inputs), 0);
        if (SLOT(b, P_state) != st_done || streq(SLOT(b, P_kind), s_scalar))
            continue;
        PyObject *c = SLOT(b, P_captured);
        if (c == Py_None)
            set_slot(b, P_captured, q);
        else if (c != q) {
            PyObject *r = PyObject_CallFunctionObjArgs(capture_more, port, q, NULL);
            if (r == NULL)
                return -1;
            Py_DECREF(r);
            return 0;
        }
    }
    return 0;
}

/* Past the queue's threshold, whether array._enqueue_plain should see ``port`` (1): it flushes
 * where a loop iteration starts -- ``port``'s call site is the one the queued trace began
 * with -- or at twice the threshold; otherwise (0) the op is recorded here, as that function
 * would record it (a trace that began before its loop reaches twice the threshold one op at
 * a time: ~3.5 us each through Python). -1 on error. */
static int flush_due(PyObject *q, PyObject *port, long pend, long lim) {
    if (pend >= 2 * lim || SLOT(q, Q_recording) != Py_None)
        return 1;
    PyObject *ents = SLOT(q, Q_entries);
    if (!PyList_CheckExact(ents) || PyList_GET_SIZE(ents) == 0)
        return 1;
    PyObject *e0 = PyList_GET_ITEM(ents, 0);
    if (!PyTuple_CheckExact(e0) || PyTuple_GET_SIZE(e0) < 2)
        return 1;
    if (!streq(PyTuple_GET_ITEM(e0, 0), s_compute))
        return 0;                       /* (no first site: only the hard limit flushes) */
    PyObject *fs = SLOT(PyTuple_GET_ITEM(e0, 1), P_site), *ps = SLOT(port, P_site);
    if (fs == NULL || ps == NULL || fs == Py_None || ps == Py_None)
        return 1;
    if (SLOT(fs, S_code) != SLOT(ps, S_code))
        return 0;
    return PyObject_RichCompareBool(SLOT(fs, S_lasti), SLOT(ps, S_lasti), Py_EQ);
}

static PyObject *enqueue(PyObject *port) {
    PyObject *q = thread_queue();
    if (q == NULL)
        return NULL;
    if (Py_TYPE(q) != QueueType || Py_TYPE(SLOT(q, Q_lock)) != &QueueLockType)
        goto python;
    PyObject *inputs = SLOT(port, P_inputs);
    if (!PyTuple_CheckExact(inputs) || PyTuple_GET_SIZE(inputs) > MAXINS)
        goto python;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(inputs); k++) {
        PyObject *iq = SLOT(PyTuple_GET_ITEM(inputs, k), P_queue);
        if (iq != q && iq != Py_None)
            goto python;
    }
    if (SLOT(q, Q_keyparts) == Py_None)
        goto python;
    if (refresh(q) < 0)
        goto fail;
    long pend = PyLong_AsLong(SLOT(q, Q_pending)), lim = PyLong_AsLong(SLOT(q, Q_limit));
    if ((pend == -1 || lim == -1) && PyErr_Occurred())
        goto fail;
    if (pend >= lim) {
        int py = flush_due(q, port, pend, lim);
        if (py < 0)
            goto fail;
        if (py)
            goto python;
    }
    if (capture(port, q) < 0)
        goto fail;
    set_slot(port, P_queue, q);
    if (compute(q, port) < 0)
        goto fail;
    Py_DECREF(q);
    return wrap(port);
python:
    Py_DECREF(q);
    return call_enqueue(port);
fail:
    Py_DECREF(q);
    return NULL;
}

/* Whether the C path may record now: no debugger hook. */
static inline int plain_now(void) {
#if PY_VERSION_HEX < 0x030C0000
    /* (per op: the hooks module's dict is looked up again only when it has changed, as its
     * version tag tells; the debugger installs its hook rarely) */
    static uint64_t seen = 0;
    static int plain = 1;
    uint64_t v = ((PyDictObject *)hooks_dict)->ma_version_tag;
    if (v == seen && v != 0)
        return plain;
    PyObject *h = PyDict_GetItemWithError(hooks_dict, s_on_record);
    plain = h == NULL || h == Py_None;
    seen = v;
    return plain;
#else
    PyObject *h = PyDict_GetItemWithError(hooks_dict, s_on_record);
    return h == NULL || h == Py_None;
#endif
}

/* Whether operand ``a`` is an Array over a piecewise port (a key of pieces.PIECEWISE): an op
 * reading it may be recorded piece by piece (pieces.lower), which the Python path decides.
 * Only the op's own operands count, as in pieces.lower; -1 on error. */
static int piecewise_operand(PyObject *a) {
    if (PyDict_GET_SIZE(piecewise) == 0 || Py_TYPE(a) != ArrayType)
        return 0;
    PyObject *p = SLOT(a, A_port);
    if (p == NULL || p == Py_None)
        return 0;                       /* (a NumPy-tier buffer: its port would be new) */
    PyObject *ref = PyWeakref_NewRef(p, NULL);      /* (the dict's keys are weak references) */
    if (ref == NULL)
        return -1;
    int r = PyDict_Contains(piecewise, ref);
    Py_DECREF(ref);
    return r;
}

/* plain_now() for an op reading ``a`` and ``b`` (NULL: one operand): 1 when the C path may
 * record it, 0 when the Python path is to, -1 on error. */
static inline int plain_for(PyObject *a, PyObject *b) {
    if (!plain_now())
        return 0;
    int r = piecewise_operand(a);
    if (r == 0 && b != NULL)
        r = piecewise_operand(b);
    return r < 0 ? -1 : !r;
}

/* ---- the NumPy tier (scheduler/tiers.py) ------------------------------------------------ */
/* The host ndarray of a computed port -- a constant or computed result, or a view the NumPy
 * tier made (its ndarray cached) -- borrowed; NULL otherwise (no error). */
static inline PyObject *concrete(PyObject *p) {
    if (SLOT(p, P_state) != st_done)
        return NULL;
    PyObject *v = SLOT(p, P_value);
    return v != NULL && PyArray_CheckExact(v) ? v : NULL;
}

/* This thread's NumPy-tier limit (elements), 0 when off or while a macro is recorded; -1 on
 * error. Kept for the last thread that asked until a setting (or a macro recording's state:
 * WorkQueue.set_recording) changes. */
static unsigned long lim_thread;
static long lim_epoch;
static Py_ssize_t lim_value;

static Py_ssize_t eager_limit_of_queue(void);

static inline Py_ssize_t eager_limit(void) {
    unsigned long me = PyThread_get_thread_ident();
    if (me == lim_thread && lim_epoch == epoch)
        return lim_value;
    Py_ssize_t lim = eager_limit_of_queue();
    if (lim >= 0) {
        lim_thread = me;
        lim_epoch = epoch;
        lim_value = lim;
    }
    return lim;
}

static Py_ssize_t eager_limit_of_queue(void) {
    PyObject *q = thread_queue();
    if (q == NULL)
        return -1;
    Py_ssize_t lim = 0;
    if (Py_TYPE(q) == QueueType && SLOT(q, Q_recording) == Py_None) {
        if (refresh(q) < 0) {
            Py_DECREF(q);
            return -1;
        }
        lim = PyLong_AsSsize_t(SLOT(q, Q_eager_limit));
        if (lim == -1 && PyErr_Occurred()) {
            Py_DECREF(q);
            return -1;
        }
    }
    Py_DECREF(q);
    return lim;
}

/* Whether ndarray ``a`` has fewer than ``lim`` elements: PyArray_SIZE without its call into
 * NumPy's API table (PyArray_MultiplyList, not inlined: ~5% of an operator on the tier). */
static inline int size_below(PyArrayObject *a, Py_ssize_t lim) {
    int nd = PyArray_NDIM(a);
    npy_intp *d = PyArray_DIMS(a), n = 1;
    for (int k = 0; k < nd; k++)
        n *= d[k];
    return n < lim;
}

/* A NumPy-tier Array over host ndarray ``v`` (new ref; steals nothing): a buffer of its
 * own, or (``base`` not NULL) a view of base port ``base``'s buffer, counted on it. */
static PyObject *eager_array(PyObject *v, PyObject *base) {
    PyObject *a = new_array_object();
    if (a == NULL)
        return NULL;
    set_slot(a, A_port, Py_None);
    set_slot(a, A_value, v);
    set_slot(a, A_base, base != NULL ? base : Py_None);
    if (base != NULL && (add_nrefs(base, 1) < 0 || add_int_slot(base, P_eager_views, 1) < 0)) {
        set_slot(a, A_base, Py_None);
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* Whether ``descr`` is a dtype streamrt computes in (dtypes.SUPPORTED_SET): the last few
 * answered yes are remembered by identity (NumPy's builtin descriptors are singletons). */
static int supported_descr(PyObject *descr) {
    static PyObject *yes[4];
    for (int k = 0; k < 4; k++)
        if (yes[k] == descr)
            return 1;
    int ok = PySet_Contains(supported, descr);
    if (ok > 0) {
        static int next = 0;
        PyObject *old = yes[next];
        yes[next] = Py_NewRef(descr);
        Py_XDECREF(old);
        next = (next + 1) % 4;
    }
    return ok;
}

/* A NumPy-tier result (steals ``r``, a NumPy call's answer): an Array over it, made a
 * C-ordered buffer of its own. NULL without an error when its dtype is not one streamrt
 * has (the Python path then computes what streamrt promises). */
static PyObject *eager_result(PyObject *r) {
    if (!PyArray_CheckExact(r)) {
        if (!PyArray_IsScalar(r, Generic)) {
            Py_DECREF(r);
            return NULL;
        }
        PyObject *a = PyArray_FromScalar(r, NULL);
        Py_DECREF(r);
        if (a == NULL)
            return NULL;
        r = a;
    }
    PyArrayObject *ra = (PyArrayObject *)r;
    int ok = supported_descr((PyObject *)PyArray_DESCR(ra));
    if (ok <= 0) {
        Py_DECREF(r);
        return NULL;
    }
    if (PyArray_BASE(ra) != NULL || !PyArray_IS_C_CONTIGUOUS(ra)) {
        /* a view of an input (np.real) or another layout (a transposed operand) */
        PyObject *c = PyArray_NewCopy(ra, NPY_CORDER);
        Py_DECREF(r);
        if (c == NULL)
            return NULL;
        r = c;
    }
    PyObject *a = eager_array(r, NULL);
    Py_DECREF(r);
    if (a != NULL)
        n_eager++;
    return a;
}

/* The computed host ndarray of an Array (borrowed) or NULL: its NumPy-tier value, or the
 * value of its computed port. */
static inline PyObject *host_of(PyObject *a) {
    PyObject *v = SLOT(a, A_value);
    if (v != NULL && v != Py_None)
        return v;
    PyObject *p = SLOT(a, A_port);
    return p != NULL && p != Py_None ? concrete(p) : NULL;
}

/* The base port whose buffer a computed Array's host ndarray is (part of), borrowed: NULL
 * for a NumPy-tier buffer of its own (no recorded work can read it: it has no port). */
static inline PyObject *host_base(PyObject *a) {
    PyObject *p = SLOT(a, A_port);
    if (p != NULL && p != Py_None)
        return streq(SLOT(p, P_kind), s_view) ? PyTuple_GET_ITEM(SLOT(p, P_inputs), 0) : p;
    PyObject *b = SLOT(a, A_base);
    return b != NULL && b != Py_None ? b : NULL;
}

/* a value a NumPy-tier op takes as it is: a computed Array's ndarray, a small NumPy array,
 * a Python or NumPy scalar (borrowed); NULL -> not the NumPy tier */
static PyObject *eager_operand(PyObject *v, Py_ssize_t lim) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == ArrayType) {
        PyObject *vv = host_of(v);
        return vv != NULL && size_below((PyArrayObject *)vv, lim) ? vv : NULL;
    }
    if (t == &PyFloat_Type || t == &PyLong_Type || t == &PyBool_Type || t == &PyComplex_Type ||
        PyArray_IsScalar(v, Generic))
        return v;
    if (t == &PyArray_Type && size_below((PyArrayObject *)v, lim))
        return v;
    return NULL;
}

/* An error NumPy raised on the NumPy tier: an invalid call (a dtype without a loop, an index
 * out of range, a value that does not fit) is cleared and left to the Python path, which
 * raises streamrt's error naming the user's line, as the recorded tier does. -1 when the
 * error is to propagate. */
static int numpy_error(void) {
    if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError) ||
        PyErr_ExceptionMatches(PyExc_OverflowError) || PyErr_ExceptionMatches(PyExc_IndexError)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

/* ``f(*vals)`` on the NumPy tier: vals are Arrays, NumPy arrays or scalars; NULL without an
 * error when one is not computed or too large, or the result's dtype is not streamrt's. */
/* The NumPy reference of op ``name`` (borrowed), looked up once into ``*slot``. */
static inline PyObject *ref_of(PyObject **slot, PyObject *name) {
    if (*slot == NULL) {
        PyObject *f = PyDict_GetItemWithError(refs, name);
        if (f == NULL)
            return NULL;
        *slot = Py_NewRef(f);
    }
    return *slot;
}

/* NumPy's elision of temporaries on the NumPy tier: the operand (index) of ``name``
 * (vals: the call's operands, hv: their host values) that is a temporary about to die -- an
 * Array only the caller's stack holds (NumPy checks the same count), whose buffer of its own
 * (no port, no view, no other holder) is large enough for a fresh allocation to cost page
 * faults -- and whose float dtype and shape the result keeps: every other operand is a
 * Python number or has its dtype and shape. -1: none. */
#define ELIDE_BYTES (256 * 1024)
static Py_ssize_t dying(PyObject *name, PyObject *const *vals, PyObject *const *hv,
                       Py_ssize_t n) {
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *a = vals[k];
        if (Py_TYPE(a) != ArrayType || Py_REFCNT(a) != 1 || Py_REFCNT(hv[k]) != 1 ||
            SLOT(a, A_value) != hv[k] || SLOT(a, A_port) != Py_None ||
            SLOT(a, A_base) != Py_None)
            continue;
        PyArrayObject *h = (PyArrayObject *)hv[k];
        if (PyArray_NBYTES(h) < ELIDE_BYTES || PyArray_BASE(h) != NULL ||
            !PyArray_IS_C_CONTIGUOUS(h) || !PyArray_ISWRITEABLE(h) ||
            PyArray_DESCR(h)->kind != 'f' || PySet_Contains(elidable, name) <= 0)
            return -1;
        for (Py_ssize_t j = 0; j < n; j++) {
            if (j == k)
                continue;
            PyObject *o = hv[j];
            PyTypeObject *t = Py_TYPE(o);
            if (t == &PyFloat_Type || t == &PyLong_Type ||
                (PyArray_IsScalar(o, Double) && PyArray_DESCR(h)->type_num == NPY_DOUBLE) ||
                (PyArray_IsScalar(o, Float) && PyArray_DESCR(h)->type_num == NPY_FLOAT))
                continue;
            if (t != &PyArray_Type ||
                PyArray_DESCR((PyArrayObject *)o) != PyArray_DESCR(h) ||
                !PyArray_SAMESHAPE((PyArrayObject *)o, h))
                return -1;
        }
        return k;
    }
    return -1;
}

/* The element count of the broadcast of the ndarrays among ``hv`` (numbers count as 0-d),
 * or -1 when their shapes do not broadcast (NumPy raises; the Python path reports it). */
static Py_ssize_t broadcast_size(PyObject *const *hv, Py_ssize_t n) {
    int nd = 0;
    for (Py_ssize_t k = 0; k < n; k++)
        if (PyArray_CheckExact(hv[k]) && PyArray_NDIM((PyArrayObject *)hv[k]) > nd)
            nd = PyArray_NDIM((PyArrayObject *)hv[k]);
    Py_ssize_t size = 1;
    for (int ax = 1; ax <= nd; ax++) {          /* (from the last axis) */
        npy_intp d = 1;
        for (Py_ssize_t k = 0; k < n; k++) {
            if (!PyArray_CheckExact(hv[k]))
                continue;
            PyArrayObject *a = (PyArrayObject *)hv[k];
            int i = PyArray_NDIM(a) - ax;
            if (i < 0)
                continue;
            npy_intp e = PyArray_DIM(a, i);
            if (e == d || e == 1)
                continue;
            if (d != 1)
                return -1;
            d = e;
        }
        size *= d;
    }
    return size;
}

static PyTypeObject F64Type;

/* A float64 element (F64Type) as NumPy's own np.float64 (new ref), for a NumPy call: NumPy's
 * ufuncs take a subclass of a scalar type through their slow conversion (~350 ns more). NULL
 * without an error for any other value. */
static inline PyObject *plain_scalar(PyObject *v) {
    if (Py_TYPE(v) != &F64Type)
        return NULL;
    PyObject *s = PyArrayScalar_New(Double);
    if (s != NULL)
        PyArrayScalar_VAL(s, Double) = PyArrayScalar_VAL(v, Double);
    return s;
}

static PyObject *eager_call_hv(PyObject **refslot, PyObject *name, PyObject *const *vals,
                               PyObject **hv, Py_ssize_t n, Py_ssize_t lim);

static PyObject *eager_call_at(PyObject **refslot, PyObject *name, PyObject *const *vals,
                               Py_ssize_t n, Py_ssize_t lim);

static PyObject *eager_call(PyObject **refslot, PyObject *name, PyObject *const *vals,
                            Py_ssize_t n) {
    Py_ssize_t lim = eager_limit();
    if (lim <= 0)
        return NULL;
    return eager_call_at(refslot, name, vals, n, lim);
}

/* The NumPy tier's limit at a call site whose ops ran in a write run at once (CallSite.now,
 * set by runtime/cscheduler.py ``_run_statement``): past the size limit, up to the largest
 * statement NumPy runs now; 0 at any other site or when the NumPy tier is off. */
static Py_ssize_t now_limit(PyObject *site) {
    if (site == NULL || SLOT(site, S_now) != Py_True)
        return 0;
    Py_ssize_t lim = eager_limit();
    if (lim <= 0)
        return lim;
    return lim > now_elements ? lim : now_elements;
}

/* f(*vals) on the NumPy tier with operands and result below ``lim`` elements */
static PyObject *eager_call_at(PyObject **refslot, PyObject *name, PyObject *const *vals,
                               Py_ssize_t n, Py_ssize_t lim) {
    PyObject *hv[3], *own[3] = {NULL, NULL, NULL};
    for (Py_ssize_t k = 0; k < n; k++)
        if ((hv[k] = eager_operand(vals[k], lim)) == NULL)
            return NULL;
    PyObject *r = NULL;
    for (Py_ssize_t k = 0; k < n; k++)
        if (Py_TYPE(hv[k]) == &F64Type) {
            if ((own[k] = plain_scalar(hv[k])) == NULL)
                goto done;
            hv[k] = own[k];
        }
    r = eager_call_hv(refslot, name, vals, hv, n, lim);
done:
    for (Py_ssize_t k = 0; k < n; k++)
        Py_XDECREF(own[k]);
    return r;
}

static PyObject *eager_call_hv(PyObject **refslot, PyObject *name, PyObject *const *vals,
                               PyObject **hv, Py_ssize_t n, Py_ssize_t lim) {
    if (n > 1) {
        /* the result too is under the limit (tiers.py): ``a[:, None] + b[None, :]`` of two
         * small vectors is a large array, recorded to fuse with what reads it */
        Py_ssize_t size = broadcast_size(hv, n);
        if (size < 0 || size >= lim)
            return NULL;
    }
    PyObject *f = ref_of(refslot, name);
    if (f == NULL)
        return NULL;
    Py_ssize_t d = dying(name, vals, hv, n);
    if (d >= 0) {                       /* into the dying operand's buffer, as NumPy would */
        PyObject *args[4] = {hv[0], n > 1 ? hv[1] : NULL, n > 2 ? hv[2] : NULL, NULL};
        args[n] = hv[d];
        PyObject *r = direct_ufunc(f, hv, n, hv[d]);    /* (the loop, cut when long) */
        if (r == NULL && !PyErr_Occurred())
            r = PyObject_Vectorcall(f, args, n, s_out_kw);
        if (r == NULL) {
            numpy_error();
            return NULL;
        }
        Py_DECREF(r);
        n_eager++;
        return Py_NewRef(vals[d]);
    }
    PyObject *r = direct_ufunc(f, hv, n, NULL);
    if (r != NULL)
        return eager_result(r);
    if (PyErr_Occurred())
        return NULL;
    r = PyObject_Vectorcall(f, hv, n, NULL);
    if (r == NULL) {
        numpy_error();
        return NULL;
    }
    return eager_result(r);
}

/* ---- binary operators ------------------------------------------------------------------- */
/* A few (operand dtype, other operand's dtype or scalar kind) -> (out, loop) dtypes of one
 * operator, by identity: the memo dict's key is a tuple whose hash (a NumPy dtype's hash is
 * computed afresh) and compare cost more than recording the rest. Filled from the memo
 * dict, whose entries never change. */
#define NMEMO 4
typedef struct { PyObject *a, *b, *dts; } Memo;

static PyObject *memo_get(Memo *m, PyObject *a, PyObject *b) {
    for (int k = 0; k < NMEMO; k++)
        if (m[k].a == a && m[k].b == b)
            return m[k].dts;
    return NULL;
}

static void memo_put(Memo *m, PyObject *a, PyObject *b, PyObject *dts) {
    Py_XDECREF(m[NMEMO - 1].a);
    Py_XDECREF(m[NMEMO - 1].b);
    Py_XDECREF(m[NMEMO - 1].dts);
    memmove(m + 1, m, (NMEMO - 1) * sizeof(Memo));
    m[0].a = Py_NewRef(a);
    m[0].b = Py_NewRef(b);
    m[0].dts = Py_NewRef(dts);
}

static void memo_clear(Memo *m) {
    for (int k = 0; k < NMEMO; k++) {
        Py_CLEAR(m[k].a);
        Py_CLEAR(m[k].b);
        Py_CLEAR(m[k].dts);
    }
}

/* The two recording callables, BinOp (an Array operator) and MapFunc (a one-operand function
 * of the namespace), share one layout and their GC and attribute slots. */
typedef struct {
    PyObject_HEAD
    PyObject *name;          /* the op (OPS key) */
    PyObject *func;          /* the Python operator f(self, other) / function f(x, ...) */
    PyObject *slow;          /* BinOp: the Python general path slow(self, other, site) */
    PyObject *reflected;     /* BinOp: Py_True / Py_False */
    PyObject *dict;          /* (__name__, __doc__, __wrapped__, ...: functools.update_wrapper) */
    PyObject *ref;           /* the op's NumPy reference (the NumPy tier), once looked up */
    vectorcallfunc vectorcall;
    Memo memo[NMEMO];        /* BinOp: (dtype, other dtype or kind); MapFunc: (dtype, None) */
} Recorder;

typedef Recorder BinOp;
typedef Recorder MapFunc;

static int recorder_traverse(Recorder *r, visitproc visit, void *arg) {
    Py_VISIT(r->func);
    Py_VISIT(r->slow);
    Py_VISIT(r->dict);
    return 0;
}

static int recorder_clear(Recorder *r) {
    memo_clear(r->memo);
    Py_CLEAR(r->ref);
    Py_CLEAR(r->name);
    Py_CLEAR(r->func);
    Py_CLEAR(r->slow);
    Py_CLEAR(r->reflected);
    Py_CLEAR(r->dict);
    return 0;
}

static void recorder_dealloc(Recorder *r) {
    PyObject_GC_UnTrack(r);
    recorder_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyMemberDef recorder_members[] = {
    {"op", T_OBJECT, offsetof(Recorder, name), READONLY, NULL},
    {NULL}};

static PyGetSetDef dict_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL}};

/* the fast path of array._binop: NULL with no error -> the general path */
static PyObject *binop_fast(BinOp *b, PyObject *self, PyObject *other, PyObject *site) {
    PyObject *p = port_of(self);
    if (p == NULL)
        return NULL;
    PyTypeObject *t = Py_TYPE(other);
    PyObject *shape = SLOT(p, P_shape);
    PyObject *q = NULL, *key, *kb;
    int is_int = 0;
    if (t == ArrayType) {
        q = port_of(other);
        if (q == NULL)
            return NULL;
        PyObject *qs = SLOT(q, P_shape);
        if (qs != shape) {
            int eq = PyObject_RichCompareBool(qs, shape, Py_EQ);
            if (eq < 0)
                return NULL;
            if (!eq) {
                if (PyTuple_GET_SIZE(shape) == 0 && !streq(SLOT(p, P_kind), s_const))
                    shape = qs;
                else if (PyTuple_GET_SIZE(qs) != 0 || streq(SLOT(q, P_kind), s_const))
                    return NULL;
            }
        }
        kb = SLOT(q, P_dtype);
    } else if (t == &PyFloat_Type || t == &PyLong_Type) {
        is_int = t == &PyLong_Type;
        kb = is_int ? s_i : s_f;
    } else {
        return NULL;
    }
    if (streq(SLOT(p, P_kind), s_const) && PyTuple_GET_SIZE(SLOT(p, P_shape)) == 0)
        return NULL;             /* constant folding: the general path */
    PyObject *pdt = SLOT(p, P_dtype);
    PyObject *dts = memo_get(b->memo, pdt, kb);
    if (dts == NULL) {
        key = PyTuple_Pack(4, b->name, pdt, kb, b->reflected);
        if (key == NULL)
            return NULL;
        dts = PyDict_GetItemWithError(fast_memo, key);
        Py_DECREF(key);
        if (dts == NULL || !PyTuple_CheckExact(dts) || PyTuple_GET_SIZE(dts) != 2)
            return NULL;
        memo_put(b->memo, pdt, kb, dts);
    }
    PyObject *out_dt = PyTuple_GET_ITEM(dts, 0), *loop_dt = PyTuple_GET_ITEM(dts, 1);
    PyObject *sp = NULL;
    if (q == NULL && is_int) {
        PyObject *lim = PyDict_GetItemWithError(iinfo, loop_dt);
        if (lim != NULL) {
            int lo = PyObject_RichCompareBool(PyTuple_GET_ITEM(lim, 0), other, Py_LE);
            int hi = PyObject_RichCompareBool(other, PyTuple_GET_ITEM(lim, 1), Py_LE);
            if (lo < 0 || hi < 0 || !lo || !hi)
                return NULL;     /* the general path raises the overflow error */
        } else if (PyErr_Occurred()) {
            return NULL;
        }
        if (streq(b->name, s_power)) {
            int neg = PyObject_RichCompareBool(other, zero, Py_LT);
            if (neg != 0)
                return NULL;     /* (the general path decides) */
        }
    }
    if (q == NULL && streq(b->name, s_power)) {
        /* x ** 2, 0.5, -1, 3: strength reduction, in the general path (array._STRENGTH) */
        double c = PyFloat_AsDouble(other);
        if (c == -1.0 && PyErr_Occurred())
            return NULL;
        if (c == 2.0 || c == 0.5 || c == -1.0 || c == 3.0)
            return NULL;
    }
    if (q == NULL) {
        sp = new_port(s_scalar, s_scalar, loop_dt, empty, empty, is_int ? weak_i : weak_f,
                      site, other, Py_None, st_done);
        if (sp == NULL)
            return NULL;
        q = sp;
    }
    PyObject *ins = b->reflected == Py_True ? PyTuple_Pack(2, q, p) : PyTuple_Pack(2, p, q);
    Py_XDECREF(sp);
    if (ins == NULL)
        return NULL;
    PyObject *port = new_port(s_map, b->name, out_dt, shape, ins, empty, site, Py_None, loop_dt,
                              st_new);
    Py_DECREF(ins);
    if (port == NULL)
        return NULL;
    PyObject *r = enqueue(port);
    Py_DECREF(port);
    if (r != NULL)
        n_native++;
    return r;
}

/* The last two NumPy-tier products ``x * v`` (either order) of a Python float and a float64
 * vector viewing a base port's buffer: the result and the base port by weak references, the
 * view by its address, stride and length (the view itself is a temporary). A product of
 * such a result with a matrix (``alpha * A[i, :] @ B``, gemm row by row) may be answered as
 * x times a block's answer for the view (batched_product, which checks the result still
 * holds x times the view's values). */
#define SCALED 2
static struct { PyObject *res, *base; char *ptr; npy_intp stride, n; double x; } scaled[SCALED];
static int scaled_next;

static void note_scaled(PyObject *self, PyObject *other, PyObject *r) {
    if (!PyFloat_CheckExact(other) || r == NULL || Py_TYPE(r) != ArrayType)
        return;
    PyObject *h = host_of(self), *base = host_base(self), *rh = host_of(r);
    if (h == NULL || base == NULL || rh == NULL || !PyArray_CheckExact(h) ||
            !PyArray_CheckExact(rh) || PyArray_NDIM((PyArrayObject *)h) != 1 ||
            PyArray_DESCR((PyArrayObject *)h)->type_num != NPY_DOUBLE ||
            PyArray_NDIM((PyArrayObject *)rh) != 1 ||
            PyArray_DESCR((PyArrayObject *)rh)->type_num != NPY_DOUBLE ||
            PyArray_DIM((PyArrayObject *)h, 0) != PyArray_DIM((PyArrayObject *)rh, 0))
        return;
    PyObject *wr = PyWeakref_NewRef(rh, NULL), *wb = PyWeakref_NewRef(base, NULL);
    if (wr == NULL || wb == NULL) {
        Py_XDECREF(wr);
        Py_XDECREF(wb);
        PyErr_Clear();
        return;
    }
    int k = scaled_next;
    scaled_next = (k + 1) % SCALED;
    Py_XSETREF(scaled[k].res, wr);
    Py_XSETREF(scaled[k].base, wb);
    scaled[k].ptr = PyArray_BYTES((PyArrayObject *)h);
    scaled[k].stride = PyArray_STRIDE((PyArrayObject *)h, 0);
    scaled[k].n = PyArray_DIM((PyArrayObject *)h, 0);
    scaled[k].x = PyFloat_AS_DOUBLE(other);
}

/* A new view of the vector a noted ``x * v`` result ``u`` is x times, its base port
 * (borrowed) and x; NULL when ``u`` is none (or no longer holds those values) */
static PyObject *scaled_source(PyArrayObject *u, PyObject **base, double *x) {
    for (int k = 0; k < SCALED; k++) {
        if (scaled[k].res == NULL || PyWeakref_GetObject(scaled[k].res) != (PyObject *)u)
            continue;
        PyObject *b = PyWeakref_GetObject(scaled[k].base);
        if (b == Py_None)
            return NULL;
        PyObject *bv = SLOT(b, P_value);
        npy_intp n = scaled[k].n, st = scaled[k].stride;
        if (bv == NULL || !PyArray_CheckExact(bv) || PyArray_DIM(u, 0) != n || n < 1 ||
                !PyArray_ISCONTIGUOUS((PyArrayObject *)bv))
            return NULL;
        /* (still inside the base's buffer: its value is the buffer the view was of) */
        char *lo = PyArray_BYTES((PyArrayObject *)bv), *hi = lo + PyArray_NBYTES((PyArrayObject *)bv);
        char *first = scaled[k].ptr, *last = first + (n - 1) * st;
        if ((first < last ? first : last) < lo || (first > last ? first : last) + 8 > hi)
            return NULL;
        double c = scaled[k].x;
        char *pu = PyArray_BYTES(u);
        npy_intp su = PyArray_STRIDE(u, 0);
        for (npy_intp i = 0; i < n; i++)    /* (a write since: not x times the view) */
            if (*(double *)(pu + i * su) != c * *(double *)(first + i * st))
                return NULL;
        PyArray_Descr *d = PyArray_DescrFromType(NPY_DOUBLE);
        PyObject *v = PyArray_NewFromDescr(&PyArray_Type, d, 1, &n, &st, first, 0, NULL);
        if (v == NULL)
            return NULL;
        if (PyArray_SetBaseObject((PyArrayObject *)v, Py_NewRef(bv)) < 0) {
            Py_DECREF(v);
            return NULL;
        }
        *base = b;
        *x = c;
        return v;
    }
    return NULL;
}

/* a (op) b on the NumPy tier, in the operator's order */
static PyObject *binop_eager_at(BinOp *b, PyObject *self, PyObject *other, Py_ssize_t lim) {
    PyObject *h = host_of(self);
    if (h == NULL)
        return NULL;
    if (b->reflected != Py_True && streq(b->name, s_power) && PyArray_Check(h) &&
            (PyLong_CheckExact(other) || PyFloat_CheckExact(other))) {
        /* a complex or bool array ** 2, -1 (ints) or 0.5 (a float): NumPy's operator calls
         * square / reciprocal / sqrt (other values than power's at infinities; bool ** 2 is
         * int8), as the general path's strength reduction does (array._strength_reduced) */
        char kind = PyArray_DESCR((PyArrayObject *)h)->kind;
        if (kind == 'c' || kind == 'b') {
            double c = PyFloat_AsDouble(other);
            if (c == -1.0 && PyErr_Occurred())
                return NULL;
            if (c == 2.0 || c == -1.0 || c == 0.5)
                return NULL;
        }
    }
    PyObject *vals[2] = {self, other};
    if (b->reflected == Py_True) {
        vals[0] = other;
        vals[1] = self;
    }
    PyObject *r = eager_call_at(&b->ref, b->name, vals, 2, lim);
    if (r != NULL && product_serve != NULL && streq(b->name, s_multiply))
        note_scaled(self, other, r);
    return r;
}

static PyObject *binop_eager(BinOp *b, PyObject *self, PyObject *other) {
    if (host_of(self) == NULL)          /* (the recorded path's case: no limit looked up) */
        return NULL;
    Py_ssize_t lim = eager_limit();
    return lim > 0 ? binop_eager_at(b, self, other, lim) : NULL;
}

static PyObject *binop_call2(BinOp *b, PyObject *self, PyObject *other) {
    int plain = enabled && Py_TYPE(self) == ArrayType ? plain_for(self, other) : 0;
    if (plain < 0)
        return NULL;
    if (!plain)
        return PyObject_CallFunctionObjArgs(b->func, self, other, NULL);
    PyObject *r = binop_eager(b, self, other);
    if (r != NULL || PyErr_Occurred())
        return r;
    PyObject *site = user_site();
    if (site == NULL) {
        if (PyErr_Occurred())
            return NULL;
        return PyObject_CallFunctionObjArgs(b->func, self, other, NULL);
    }
    Py_ssize_t now = now_limit(site);
    if (now > 0) {
        r = binop_eager_at(b, self, other, now);
        if (r != NULL || PyErr_Occurred()) {
            Py_DECREF(site);
            return r;
        }
    } else if (now < 0) {
        Py_DECREF(site);
        return NULL;
    }
    r = binop_fast(b, self, other, site);
    if (r == NULL && !PyErr_Occurred())
        r = PyObject_CallFunctionObjArgs(b->slow, self, other, site, NULL);
    Py_DECREF(site);
    return r;
}

/* op.at(a, b, site): the operator at a call site streamrt's own code found (the vector dot's
 * product), the fast path or the general one */
static PyObject *binop_at(BinOp *b, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) {
        PyErr_SetString(PyExc_TypeError, "at(a, b, site)");
        return NULL;
    }
    PyObject *r = NULL;
    int plain = enabled && Py_TYPE(args[0]) == ArrayType && Py_TYPE(args[2]) == SiteType ?
        plain_for(args[0], args[1]) : 0;
    if (plain < 0)
        return NULL;
    if (plain) {
        r = binop_eager(b, args[0], args[1]);
        Py_ssize_t now = r == NULL && !PyErr_Occurred() ? now_limit(args[2]) : 0;
        if (now > 0)
            r = binop_eager_at(b, args[0], args[1], now);
        if (r == NULL && !PyErr_Occurred())
            r = binop_fast(b, args[0], args[1], args[2]);
    }
    if (r == NULL && !PyErr_Occurred())
        r = PyObject_CallFunctionObjArgs(b->slow, args[0], args[1], args[2], NULL);
    return r;
}

static PyMethodDef binop_methods[] = {
    {"at", (PyCFunction)(void (*)(void))binop_at, METH_FASTCALL,
     "at(a, b, site): record ``a (op) b`` at the given call site."},
    {NULL}};

static PyObject *binop_vectorcall(PyObject *o, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames) {
    BinOp *b = (BinOp *)o;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n == 2 && kwnames == NULL)
        return binop_call2(b, args[0], args[1]);
    return PyObject_Vectorcall(b->func, args, nargsf, kwnames);
}

static PyObject *binop_new(PyTypeObject *tp, PyObject *args, PyObject *Py_UNUSED(kw)) {
    PyObject *name, *reflected, *func, *slow;
    if (!PyArg_ParseTuple(args, "UOOO:BinOp", &name, &reflected, &func, &slow))
        return NULL;
    BinOp *b = (BinOp *)tp->tp_alloc(tp, 0);
    if (b == NULL)
        return NULL;
    b->name = Py_NewRef(name);
    b->reflected = Py_NewRef(PyObject_IsTrue(reflected) ? Py_True : Py_False);
    b->func = Py_NewRef(func);
    b->slow = Py_NewRef(slow);
    b->vectorcall = binop_vectorcall;
    return (PyObject *)b;
}

/* tp_descr_get of the method-like types: a bound method, as a function's (CPython calls the
 * operators unbound; this is for ``a.__add__``) */
static PyObject *method_get(PyObject *self, PyObject *obj, PyObject *Py_UNUSED(type)) {
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyTypeObject BinOpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "streamrt.frontend._native.BinOp",
    .tp_basicsize = sizeof(BinOp),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "An Array operator recorded in C (the Python operator is __wrapped__).",
    .tp_new = binop_new,
    .tp_traverse = (traverseproc)recorder_traverse,
    .tp_clear = (inquiry)recorder_clear,
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(BinOp, vectorcall),
    .tp_descr_get = method_get,
    .tp_members = recorder_members,
    .tp_methods = binop_methods,
    .tp_getset = dict_getset,
    .tp_dictoffset = offsetof(BinOp, dict),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
};

/* ---- one-operand map functions (ps.sqrt, ps.exp, ...) ----------------------------------- */
static PyObject *mapfunc_vectorcall(PyObject *o, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames) {
    MapFunc *m = (MapFunc *)o;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n == 1 && kwnames == NULL && enabled && Py_TYPE(args[0]) != ArrayType &&
        (Py_TYPE(args[0]) == &PyFloat_Type || Py_TYPE(args[0]) == &PyLong_Type ||
         PyArray_IsScalar(args[0], Generic)) && plain_now()) {
        /* a number (``np.sqrt(A[i, i])``: NumPy's element is a NumPy scalar): the NumPy tier,
         * a 0-d computed Array, instead of a constant port and a recorded op */
        PyObject *r = eager_call(&m->ref, m->name, args, 1);
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    int plain = n == 1 && kwnames == NULL && enabled && Py_TYPE(args[0]) == ArrayType ?
        plain_for(args[0], NULL) : 0;
    if (plain < 0)
        return NULL;
    if (!plain)
        return PyObject_Vectorcall(m->func, args, nargsf, kwnames);
    if (host_of(args[0]) != NULL) {     /* the NumPy tier */
        PyObject *r = eager_call(&m->ref, m->name, args, 1);
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    PyObject *p = port_of(args[0]);
    if (p == NULL)
        return NULL;
    if (streq(SLOT(p, P_kind), s_const) && PyTuple_GET_SIZE(SLOT(p, P_shape)) == 0)
        return PyObject_Vectorcall(m->func, args, nargsf, kwnames);
    PyObject *pdt = SLOT(p, P_dtype);
    PyObject *dts = memo_get(m->memo, pdt, Py_None);
    if (dts == NULL) {
        PyObject *key = PyTuple_Pack(2, m->name, pdt);
        if (key == NULL)
            return NULL;
        dts = PyDict_GetItemWithError(ufast_memo, key);
        Py_DECREF(key);
        if (dts == NULL || !PyTuple_CheckExact(dts) || PyTuple_GET_SIZE(dts) != 2) {
            if (PyErr_Occurred())
                return NULL;
            return PyObject_Vectorcall(m->func, args, nargsf, kwnames);
        }
        memo_put(m->memo, pdt, Py_None, dts);
    }
    PyObject *site = user_site();
    if (site == NULL) {
        if (PyErr_Occurred())
            return NULL;
        return PyObject_Vectorcall(m->func, args, nargsf, kwnames);
    }
    Py_ssize_t now = host_of(args[0]) != NULL ? now_limit(site) : 0;
    if (now != 0) {
        PyObject *r = now > 0 ? eager_call_at(&m->ref, m->name, args, 1, now) : NULL;
        if (r != NULL || PyErr_Occurred()) {
            Py_DECREF(site);
            return r;
        }
    }
    PyObject *ins = PyTuple_Pack(1, p);
    PyObject *port = ins == NULL ? NULL :
        new_port(s_map, m->name, PyTuple_GET_ITEM(dts, 0), SLOT(p, P_shape), ins, empty, site,
                 Py_None, PyTuple_GET_ITEM(dts, 1), st_new);
    Py_XDECREF(ins);
    Py_DECREF(site);
    if (port == NULL)
        return NULL;
    PyObject *r = enqueue(port);
    Py_DECREF(port);
    if (r != NULL)
        n_native++;
    return r;
}

static PyObject *mapfunc_new(PyTypeObject *tp, PyObject *args, PyObject *Py_UNUSED(kw)) {
    PyObject *name, *func;
    if (!PyArg_ParseTuple(args, "UO:MapFunc", &name, &func))
        return NULL;
    MapFunc *m = (MapFunc *)tp->tp_alloc(tp, 0);
    if (m == NULL)
        return NULL;
    m->name = Py_NewRef(name);
    m->func = Py_NewRef(func);
    m->vectorcall = mapfunc_vectorcall;
    return (PyObject *)m;
}

static PyObject *mapfunc_repr(MapFunc *m) {
    return PyUnicode_FromFormat("<streamrt function %U>", m->name);
}

/* pickled by name, as the function it stands for (``__module__`` and ``__qualname__`` are
 * the Python function's, frontend/native.py) */
static PyObject *mapfunc_reduce(PyObject *self, PyObject *Py_UNUSED(unused)) {
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef mapfunc_methods[] = {
    {"__reduce__", mapfunc_reduce, METH_NOARGS, NULL},
    {NULL}};

static PyTypeObject MapFuncType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "streamrt.frontend._native.MapFunc",
    .tp_basicsize = sizeof(MapFunc),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A one-operand element-wise function recorded in C (the Python function is "
              "__wrapped__).",
    .tp_new = mapfunc_new,
    .tp_traverse = (traverseproc)recorder_traverse,
    .tp_clear = (inquiry)recorder_clear,
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_repr = (reprfunc)mapfunc_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(MapFunc, vectorcall),
    .tp_members = recorder_members,
    .tp_methods = mapfunc_methods,
    .tp_getset = dict_getset,
    .tp_dictoffset = offsetof(MapFunc, dict),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
};

/* A MapFunc that is an Array method (__neg__, __abs__, ...): bound to its instance, as a
 * function is (a MapFunc as a module function, like NumPy's ufuncs, is not). */
static PyTypeObject MapMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "streamrt.frontend._native.MapMethod",
    .tp_basicsize = sizeof(MapFunc),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A one-operand Array operator recorded in C (the Python method is __wrapped__).",
    .tp_base = &MapFuncType,
    .tp_new = mapfunc_new,
    .tp_traverse = (traverseproc)recorder_traverse,
    .tp_clear = (inquiry)recorder_clear,
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(MapFunc, vectorcall),
    .tp_descr_get = method_get,
    .tp_dictoffset = offsetof(MapFunc, dict),
};

/* ---- indexing and in-place operators on the NumPy tier ------------------------------------ */
/* Array.__getitem__, __setitem__ and the in-place operators (__iadd__, ...) of a computed
 * array: NumPy's own indexing and in-place ufuncs on its buffer. Anything else -- a lazy
 * array, an advanced index, a base that recorded work still reads -- calls the Python
 * method, the definition. */
enum { F_GETITEM, F_SETITEM, F_INPLACE, F_UFUNC, F_FUNC, F_FUNC_ANY };

typedef struct {
    PyObject_HEAD
    int kind;
    PyObject *name;          /* F_INPLACE: the op (OPS key) */
    PyObject *func;          /* the Python method */
    PyObject *ref;           /* F_INPLACE: the op's NumPy ufunc, once looked up */
    PyObject *dict;
    vectorcallfunc vectorcall;
} Fast;

/* An index NumPy treats as basic (ints, slices, ..., None, or a tuple of them): a view or
 * an element, never a copy. */
static int basic_item(PyObject *k) {
    return PyLong_CheckExact(k) || PySlice_Check(k) || k == Py_Ellipsis || k == Py_None ||
           PyArray_IsScalar(k, Integer);
}

/* an index item as NumPy takes it on the NumPy tier (new ref): a basic item, an index
 * array (a computed Array's host ndarray, a NumPy array, a list); NULL without an error ->
 * the Python path. ``*basic`` is cleared for an index array (the result is a copy). */
static PyObject *eager_item(PyObject *k, Py_ssize_t lim, int *basic) {
    if (basic_item(k))
        return Py_NewRef(k);
    if (Py_TYPE(k) == ArrayType) {
        PyObject *h = host_of(k);
        if (h == NULL || !size_below((PyArrayObject *)h, lim))
            return NULL;
        *basic = 0;
        return Py_NewRef(h);
    }
    if (PyArray_CheckExact(k) || PyList_CheckExact(k) || PyBool_Check(k)) {
        *basic = 0;
        return Py_NewRef(k);
    }
    return NULL;
}

static PyObject *eager_key(PyObject *key, Py_ssize_t lim, int *basic) {
    *basic = 1;
    if (!PyTuple_CheckExact(key))
        return eager_item(key, lim, basic);
    Py_ssize_t n = PyTuple_GET_SIZE(key), k;
    for (k = 0; k < n && basic_item(PyTuple_GET_ITEM(key, k)); k++)
        ;
    if (k == n)                         /* all basic (the common case): the key itself */
        return Py_NewRef(key);
    PyObject *out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *e = eager_item(PyTuple_GET_ITEM(key, k), lim, basic);
        if (e == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, k, e);
    }
    return out;
}


static PyObject *wrap_f64(PyObject *r);
static PyObject *new_f64(double v);

/* The address of element ``key`` of float64 ndarray ``a`` when ``key`` is one Python int
 * per axis (NumPy's negative indices counted from the end); NULL without an error when the
 * key is anything else (NumPy's indexing then decides, and raises), or out of range. */
static char *f64_element(PyArrayObject *a, PyObject *key) {
    if (PyArray_TYPE(a) != NPY_DOUBLE || !PyArray_ISNBO(PyArray_DESCR(a)->byteorder) ||
            !PyArray_ISALIGNED(a))
        return NULL;
    int nd = PyArray_NDIM(a);
    PyObject *const *items = &key;
    Py_ssize_t n = 1;
    if (PyTuple_CheckExact(key)) {
        n = PyTuple_GET_SIZE(key);
        items = &PyTuple_GET_ITEM(key, 0);
    }
    if (n != nd || nd == 0)
        return NULL;
    char *p = PyArray_BYTES(a);
    for (int ax = 0; ax < nd; ax++) {
        if (!PyLong_CheckExact(items[ax]))
            return NULL;
        Py_ssize_t i = PyLong_AsSsize_t(items[ax]);
        if (i == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return NULL;
        }
        npy_intp d = PyArray_DIM(a, ax);
        if (i < 0)
            i += d;
        if (i < 0 || i >= d)
            return NULL;
        p += i * PyArray_STRIDE(a, ax);
    }
    return p;
}

/* indexing.register(base, arr): Array ``arr`` reads base port ``base`` (its ``holders``,
 * id -> weak reference); the Python function when the dict is due for pruning. */
static int note_alias(PyObject *base, PyObject *arr) {
    PyObject *h = SLOT(base, P_holders);
    PyObject *id = PyLong_FromVoidPtr(arr);
    if (id == NULL)
        return -1;
    int rc = -1;
    if (h != NULL && h != Py_None) {
        if (!PyDict_CheckExact(h))
            goto python;
        PyObject *w = PyDict_GetItemWithError(h, id);
        if (w != NULL && PyWeakref_CheckRef(w) && PyWeakref_GET_OBJECT(w) == arr) {
            Py_DECREF(id);
            return 0;                   /* (already noted: views of a view) */
        }
        if (PyErr_Occurred())
            goto out;
        Py_ssize_t n = PyDict_GET_SIZE(h);
        if (n >= 32 && (n & (n - 1)) == 0)
            goto python;                /* (its dead entries pruned there) */
    }
    PyObject *w = PyWeakref_NewRef(arr, NULL);
    if (w == NULL)
        goto out;
    if (h == NULL || h == Py_None) {
        PyObject *d = PyDict_New();
        if (d != NULL && PyDict_SetItem(d, id, w) == 0) {
            set_slot(base, P_holders, d);
            rc = 0;
        }
        Py_XDECREF(d);
    } else {
        rc = PyDict_SetItem(h, id, w);
    }
    Py_DECREF(w);
    goto out;
python: {
        PyObject *t = PyObject_CallFunctionObjArgs(register_alias, base, arr, NULL);
        rc = t == NULL ? -1 : 0;
        Py_XDECREF(t);
    }
out:
    Py_DECREF(id);
    return rc;
}

/* a[key] of an array not computed yet, for a key of Python ints and slices (one per leading
 * axis): the view port Array.__getitem__ records (array._view), its base's count and its
 * aliases (indexing.register) as there. NULL without an error -> the Python path: another
 * key, an index out of range (its error), a result under the NumPy tier's limit (the
 * Python path computes the array first), a computed base, a caller in streamrt itself. */
static PyObject *getitem_lazy(PyObject *self, PyObject *key) {
    PyObject *p = SLOT(self, A_port);
    if (p == NULL || p == Py_None || !plain_now())
        return NULL;
    PyObject *base = p, *pst = NULL;
    Py_ssize_t off = 0;
    PyObject *shp = SLOT(p, P_shape);
    if (!PyTuple_CheckExact(shp))
        return NULL;
    Py_ssize_t nd = PyTuple_GET_SIZE(shp);
    if (nd > 32)
        return NULL;
    Py_ssize_t dims[32], st[32];
    for (Py_ssize_t d = 0; d < nd; d++) {
        dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shp, d));
        if (dims[d] == -1 && PyErr_Occurred())
            goto python;
    }
    if (streq(SLOT(p, P_kind), s_view)) {
        base = PyTuple_GET_ITEM(SLOT(p, P_inputs), 0);
        PyObject *prm = SLOT(p, P_params);
        if (!PyTuple_CheckExact(prm) || PyTuple_GET_SIZE(prm) != 2)
            return NULL;
        off = PyLong_AsSsize_t(PyTuple_GET_ITEM(prm, 0));
        pst = PyTuple_GET_ITEM(prm, 1);
        if ((off == -1 && PyErr_Occurred()) || !PyTuple_CheckExact(pst) ||
                PyTuple_GET_SIZE(pst) != nd)
            goto python;
        for (Py_ssize_t d = 0; d < nd; d++) {
            st[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(pst, d));
            if (st[d] == -1 && PyErr_Occurred())
                goto python;
        }
    } else {
        Py_ssize_t acc = 1;
        for (Py_ssize_t d = nd - 1; d >= 0; d--) {
            st[d] = acc;
            acc *= dims[d];
        }
    }
    PyObject *bs = SLOT(base, P_state);
    if (bs != st_new && bs != st_submitted)
        return NULL;
    PyObject *const *items = &key;
    Py_ssize_t n = 1;
    if (PyTuple_CheckExact(key)) {
        n = PyTuple_GET_SIZE(key);
        items = &PyTuple_GET_ITEM(key, 0);
    }
    if (n > nd)
        return NULL;
    Py_ssize_t oshape[32], ost[32], m = 0, size = 1;
    for (Py_ssize_t d = 0; d < nd; d++) {
        if (d >= n) {
            oshape[m] = dims[d];
            ost[m++] = st[d];
        } else if (PyLong_CheckExact(items[d])) {
            Py_ssize_t i = PyLong_AsSsize_t(items[d]);
            if (i == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return NULL;
            }
            if (i < 0)
                i += dims[d];
            if (i < 0 || i >= dims[d])
                return NULL;
            off += i * st[d];
            continue;
        } else if (PySlice_Check(items[d])) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(items[d], &start, &stop, &step) < 0) {
                PyErr_Clear();
                return NULL;
            }
            if (step == 0)
                return NULL;
            Py_ssize_t len = PySlice_AdjustIndices(dims[d], &start, &stop, step);
            if (len)
                off += start * st[d];
            oshape[m] = len;
            ost[m++] = st[d] * step;
        } else {
            return NULL;
        }
        size *= oshape[m - 1];
    }
    Py_ssize_t lim = eager_limit();
    if (lim < 0)
        return NULL;
    if (size < lim || m == 0)
        return NULL;        /* (a small read: computed first; an element: a copy -- Python) */
    PyObject *site = user_site();
    if (site == NULL)
        return NULL;
    PyObject *shape = PyTuple_New(m), *strides = PyTuple_New(m), *params = NULL,
             *inputs = NULL, *v = NULL, *r = NULL;
    if (shape == NULL || strides == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *a = PyLong_FromSsize_t(oshape[k]), *b = PyLong_FromSsize_t(ost[k]);
        if (a == NULL || b == NULL) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            goto done;
        }
        PyTuple_SET_ITEM(shape, k, a);
        PyTuple_SET_ITEM(strides, k, b);
    }
    params = Py_BuildValue("(nO)", off, strides);
    inputs = PyTuple_Pack(1, base);
    if (params == NULL || inputs == NULL)
        goto done;
    v = new_port(s_view, s_view, SLOT(p, P_dtype), shape, inputs, params, site, Py_None,
                 Py_None, st_new);
    if (v == NULL || add_nrefs(base, 1) < 0)
        goto done;
    r = enqueue(v);
    if (r == NULL)
        goto done;
    /* a write through any alias of the base must be seen through all (indexing.py) */
    if (note_alias(base, r) < 0 || note_alias(base, self) < 0)
        Py_CLEAR(r);
    else
        n_native++;
done:
    Py_DECREF(site);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(params);
    Py_XDECREF(inputs);
    Py_XDECREF(v);
    return r;
python:                                 /* (a shape or view not of plain ints) */
    PyErr_Clear();
    return NULL;
}

/* The base port a NumPy-tier view of computed Array ``self`` is counted on (borrowed): its
 * host_base, or, for a buffer of its own, the port made for it now (the base of its views);
 * NULL with an error. */
static PyObject *view_base(PyObject *self) {
    PyObject *base = host_base(self);
    if (base == NULL) {
        if (port_of(self) == NULL)
            return NULL;
        base = host_base(self);
    }
    return base;
}

/* a[key] of a computed array: a NumPy scalar for an element (as NumPy gives), else a view
 * port over the base (its ndarray cached, counted on the base: tiers.py); NULL without an
 * error -> the Python path */
static PyObject *getitem_fast(PyObject *self, PyObject *key) {
    PyObject *pv = host_of(self);
    if (pv == NULL)
        return PyErr_Occurred() ? NULL : getitem_lazy(self, key);
    Py_ssize_t lim = eager_limit();
    if (lim <= 0)
        return NULL;
    char *el = f64_element((PyArrayObject *)pv, key);
    if (el != NULL)                     /* an element of a float64 array: read here */
        return new_f64(*(double *)el);
    int basic;
    PyObject *hkey = eager_key(key, lim, &basic);
    if (hkey == NULL)
        return NULL;
    if (!basic) {                       /* an index array: NumPy's gather, a copy */
        PyObject *r = direct_gather(pv, hkey);
        if (r == NULL && !PyErr_Occurred())
            r = PyObject_GetItem(pv, hkey);
        Py_DECREF(hkey);
        if (r == NULL) {
            numpy_error();
            return NULL;
        }
        return PyArray_CheckExact(r) || PyArray_IsScalar(r, Generic) ? eager_result(r) : r;
    }
    Py_DECREF(hkey);
    PyObject *base = view_base(self);
    if (base == NULL)
        return NULL;
    PyObject *r = PyObject_GetItem(pv, key);
    if (r == NULL) {
        numpy_error();
        return NULL;
    }
    if (!PyArray_CheckExact(r))
        return wrap_f64(r);             /* an element: a NumPy scalar */
    PyObject *a = eager_array(r, base);
    Py_DECREF(r);
    return a;
}

/* a.T on the NumPy tier: a computed Array's transposed view, counted on its base (array.py
 * Array.T's fast path: ~0.1 us against ~0.6 in Python); None -> the general path */
static PyObject *transpose_now(PyObject *Py_UNUSED(mod), PyObject *self) {
    if (!enabled || Py_TYPE(self) != ArrayType)
        Py_RETURN_NONE;
    PyObject *pv = host_of(self);
    if (pv == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    Py_ssize_t lim = eager_limit();
    if (lim < 0)
        return NULL;
    if (lim == 0)
        Py_RETURN_NONE;
    PyObject *base = view_base(self);
    if (base == NULL)
        return NULL;
    PyObject *r = PyArray_Transpose((PyArrayObject *)pv, NULL);
    if (r == NULL)
        return NULL;
    PyObject *a = eager_array(r, base);
    Py_DECREF(r);
    return a;
}

static int product_write_ok(PyObject *base, char *lo, char *hi);
static int product_write_ok_array(PyObject *base, PyArrayObject *dst);
typedef struct ProductSlot ProductSlot;
static ProductSlot *run_slot(PyObject *captured);

/* 1 done, 0 -> the Python path, -1 error */
/* Whether ``self``'s buffer may be written in place now: computed, and no recorded work
 * still reads it (tiers.settle otherwise, in Python). ``*guard``: the base, when a block of
 * products alone captures it (the caller asks product_write_ok for the bytes it writes);
 * else NULL. */
static inline PyObject *writable_host(PyObject *self, PyObject **guard) {
    PyObject *pv = host_of(self);
    *guard = NULL;
    if (pv == NULL)
        return NULL;
    PyObject *b = host_base(self);
    PyObject *c = b == NULL ? Py_None : slot_or_none(b, P_captured);
    if (c == Py_None)
        return pv;
    if (run_slot(c) == NULL || !PyArray_CheckExact(pv))
        return NULL;
    *guard = b;
    return pv;
}

static int setitem_fast(PyObject *self, PyObject *key, PyObject *value) {
    PyObject *guard;
    PyObject *pv = writable_host(self, &guard);
    if (pv == NULL)
        return 0;
    Py_ssize_t lim = eager_limit();
    if (lim <= 0)
        return (int)lim;
    PyObject *vv = eager_operand(value, lim);
    if (vv == NULL)
        return 0;
    PyTypeObject *vt = Py_TYPE(vv);
    if ((vt == &F64Type || vt == &PyFloat_Type || vt == &PyDoubleArrType_Type) &&
            PyArray_ISWRITEABLE((PyArrayObject *)pv)) {
        char *el = f64_element((PyArrayObject *)pv, key);
        if (el != NULL && guard != NULL && !product_write_ok(guard, el, el + 8))
            return 0;
        if (el != NULL) {               /* an element of a float64 array: written here */
            *(double *)el = vt == &PyFloat_Type ? PyFloat_AS_DOUBLE(vv)
                                                : PyArrayScalar_VAL(vv, Double);
            n_eager++;
            return 1;
        }
    }
    int basic;
    PyObject *hkey = eager_key(key, lim, &basic);
    if (hkey == NULL)
        return 0;
    if (guard != NULL) {                    /* the bytes written, outside the block's rows */
        PyObject *dst = basic ? PyObject_GetItem(pv, hkey) : NULL;
        int ok = dst != NULL && PyArray_CheckExact(dst) &&
            product_write_ok_array(guard, (PyArrayObject *)dst);
        Py_XDECREF(dst);
        if (!ok) {
            PyErr_Clear();
            Py_DECREF(hkey);
            return 0;
        }
    }
    PyObject *own = plain_scalar(vv);       /* (NumPy converts a scalar subclass slowly) */
    if (own == NULL && PyErr_Occurred()) {
        Py_DECREF(hkey);
        return -1;
    }
    int rc = basic ? direct_setitem(pv, hkey, own != NULL ? own : vv) :
        direct_scatter(pv, hkey, vv);
    if (rc == 0)
        rc = PyObject_SetItem(pv, hkey, own != NULL ? own : vv);
    Py_XDECREF(own);
    Py_DECREF(hkey);
    if (rc < 0)
        return numpy_error();
    n_eager++;
    return 1;
}

/* a op= b: NumPy's in-place ufunc into a's buffer; NULL without an error -> Python */
static PyObject *inplace_fast(Fast *f, PyObject *self, PyObject *other) {
    PyObject *guard;
    PyObject *pv = writable_host(self, &guard);
    if (pv == NULL || (guard != NULL && !product_write_ok_array(guard, (PyArrayObject *)pv)))
        return NULL;
    Py_ssize_t lim = eager_limit();
    if (lim <= 0 || !size_below((PyArrayObject *)pv, lim))
        return NULL;
    PyObject *ov = eager_operand(other, lim);
    if (ov == NULL)
        return NULL;
    PyObject *uf = ref_of(&f->ref, f->name);
    if (uf == NULL)
        return NULL;
    PyObject *own = plain_scalar(ov);
    if (own == NULL && PyErr_Occurred())
        return NULL;
    PyObject *args[3] = {pv, own != NULL ? own : ov, pv};
    PyObject *r = direct_ufunc(uf, args, 2, pv);
    if (r == NULL && !PyErr_Occurred())
        r = PyObject_Vectorcall(uf, args, 3, NULL);
    Py_XDECREF(own);
    if (r == NULL) {
        numpy_error();
        return NULL;
    }
    Py_DECREF(r);
    n_eager++;
    return Py_NewRef(self);
}

/* Array.__array_ufunc__(ufunc, "__call__", *inputs) with no keywords, inputs computed and
 * small (Arrays, NumPy arrays, Python or NumPy scalars): NumPy's ufunc now, when its result
 * dtype is one streamrt has. NULL without an error -> the Python method. */
static PyObject *ufunc_fast(PyObject *const *args, Py_ssize_t n) {
    if (n < 4 || n > 6 || !PyUnicode_Check(args[2]) ||
        PyUnicode_CompareWithASCIIString(args[2], "__call__") != 0)
        return NULL;
    PyObject *name = PyDict_GetItemWithError(ufunc_ops, args[1]);
    PyObject *slot = NULL;      /* (a ufunc: its reference is itself, held by the dict) */
    PyObject *r = name == NULL ? NULL : eager_call(&slot, name, args + 3, n - 3);
    Py_XDECREF(slot);
    return r;
}

/* ---- NumPy functions on the NumPy tier (array.eager_function) ----------------------------- */
#define MAXFOUND 16
typedef struct { PyObject *host[MAXFOUND], *array[MAXFOUND]; int n; } Found;

/* an argument as the NumPy call takes it (new ref): an Array's host ndarray, a list or tuple
 * of them (one level); NULL without an error -> not the NumPy tier */
static PyObject *eager_arg(PyObject *v, Py_ssize_t lim, Found *fd, int deep) {
    if (Py_TYPE(v) == ArrayType) {
        PyObject *h = host_of(v);
        if (h == NULL || !size_below((PyArrayObject *)h, lim) || fd->n >= MAXFOUND)
            return NULL;
        fd->host[fd->n] = h;
        fd->array[fd->n] = v;
        fd->n++;
        return Py_NewRef(h);
    }
    if (deep && (PyList_CheckExact(v) || PyTuple_CheckExact(v))) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        PyObject **items = PySequence_Fast_ITEMS(v);
        Py_ssize_t k;
        for (k = 0; k < n; k++)
            if (Py_TYPE(items[k]) == ArrayType)
                break;
        if (k == n)
            return Py_NewRef(v);
        int list = PyList_CheckExact(v);
        PyObject *out = list ? PyList_New(n) : PyTuple_New(n);
        if (out == NULL)
            return NULL;
        for (k = 0; k < n; k++) {
            PyObject *e = eager_arg(items[k], lim, fd, 0);
            if (e == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            if (list)
                PyList_SET_ITEM(out, k, e);
            else
                PyTuple_SET_ITEM(out, k, e);
        }
        return out;
    }
    return Py_NewRef(v);
}

static PyObject *root_of(PyObject *a) {
    while (PyArray_Check(a) && PyArray_BASE((PyArrayObject *)a) != NULL)
        a = PyArray_BASE((PyArrayObject *)a);
    return a;
}

/* a NumPy-tier call's answer (steals r): see array._eager_out; NULL without an error -> the
 * Python path */
static PyObject *eager_out(PyObject *r, Found *fd) {
    if (PyArray_CheckExact(r)) {
        PyArrayObject *ra = (PyArrayObject *)r;
        if (supported_descr((PyObject *)PyArray_DESCR(ra)) <= 0) {
            Py_DECREF(r);
            return NULL;
        }
        if (PyArray_BASE(ra) != NULL) {
            PyObject *root = root_of(r);
            for (int k = 0; k < fd->n; k++) {
                if (root_of(fd->host[k]) != root)
                    continue;
                PyObject *a = fd->array[k];
                PyObject *b = host_base(a);
                if (b == NULL) {
                    if (port_of(a) == NULL) {
                        Py_DECREF(r);
                        return NULL;
                    }
                    b = host_base(a);
                }
                PyObject *v = eager_array(r, b);
                Py_DECREF(r);
                return v;
            }
        }
        return eager_result(r);
    }
    if (PyTuple_Check(r) || PyList_CheckExact(r)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(r);
        PyObject *items = PyTuple_New(n);
        if (items == NULL) {
            Py_DECREF(r);
            return NULL;
        }
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject *e = eager_out(Py_NewRef(PySequence_Fast_GET_ITEM(r, k)), fd);
            if (e == NULL) {
                Py_DECREF(items);
                Py_DECREF(r);
                return NULL;
            }
            PyTuple_SET_ITEM(items, k, e);
        }
        PyObject *out;
        if (PyList_CheckExact(r))
            out = PySequence_List(items);
        else if (PyTuple_CheckExact(r))
            out = Py_NewRef(items);
        else                            /* a named tuple (np.linalg's results) */
            out = PyObject_CallObject((PyObject *)Py_TYPE(r), items);
        Py_DECREF(items);
        Py_DECREF(r);
        return out;
    }
    if (PyArray_Check(r)) {             /* an ndarray subclass: not for the NumPy tier */
        Py_DECREF(r);
        return NULL;
    }
    if (Py_TYPE(r) != &PyDoubleArrType_Type && PyArray_IsScalar(r, Generic)) {
        /* a NumPy scalar of a dtype streamrt does not have (float16: arctan2 of 0-d bools):
         * refused, as the Python path (array._eager_out) refuses it */
        PyArray_Descr *d = PyArray_DescrFromScalar(r);
        int ok = d == NULL ? -1 : supported_descr((PyObject *)d);
        Py_XDECREF(d);
        if (ok <= 0) {
            Py_DECREF(r);
            return NULL;
        }
    }
    /* a scalar (NumPy's or Python's), None, ...: a float64 one as an element is
     * (``A[i, :] @ x`` then meets ``A[i, :]`` directly) */
    return wrap_f64(r);
}

/* Blocks of products runtime/products.py computed, registered for the calls they answer
 * (``product_block``): a call whose vector is a row of one -- same base ports, orientation,
 * dtype, vector stride and length, matrix strides, contracted rows, a window inside the
 * block's columns -- is answered here without the Python call; the last row of a block goes
 * to Python (which then computes the next block). The ports' captured marks keep a block
 * valid: a write into either base goes through tiers.settle, and the run's release clears
 * its slot. */
#define PRODUCT_SLOTS 4
struct ProductSlot {
    /* bu, bw: weak references to the base ports (a slot keeps no array alive; a port that
     * died answers nothing, whatever port is later made at its address); block, run: strong
     * references; block NULL: the slot is free */
    PyObject *bu, *bw, *block, *run;
    int left, type;
    Py_ssize_t su, t0, t1, step, rows, bc0;
    /* row j's vector: the window [r0 + j dr, + K + j dK) of the line at block_lp + j step;
     * r0 < 0: the matrix exactly (wptr, n, K), the vector the whole line */
    npy_intp r0, dr, K, dK, mw_ptr, wptr, n, block_lp;
    npy_intp ext, len;      /* row 0's elements the block read: from ext, len of them */
    npy_intp next, floor;   /* rows answered: below next; rows answerable: from floor on */
};
static ProductSlot product_slots[PRODUCT_SLOTS];
static long long n_products_fast;

/* Call sites (code object, bytecode offset) whose products of two base ports (by their
 * ids, never reused: new arrays at the site -- the next call of a function -- are watched
 * again) are not watched any more: their runs were written while in use, or never came to
 * a block (products.serve answered False). The code object by its address (one reused
 * later only costs that site its blocks); cleared by product_block(-1, None)
 * (ps.clear_caches). */
#define REFUSED_SITES 64
static struct { void *code; int lasti; long long bu, bw; } refused[REFUSED_SITES];
static int n_refused_next;

static void product_slot_clear(ProductSlot *s) {
    Py_CLEAR(s->bu);
    Py_CLEAR(s->bw);
    Py_CLEAR(s->block);
    Py_CLEAR(s->run);
}

/* The slot holding the block of run ``captured`` (a port's mark), or NULL */
static ProductSlot *run_slot(PyObject *captured) {
    for (int k = 0; k < PRODUCT_SLOTS; k++)
        if (product_slots[k].block != NULL && product_slots[k].run == captured)
            return &product_slots[k];
    return NULL;
}

/* A NumPy-tier write of the bytes [lo, hi) of ``base``'s buffer while a product run alone
 * captures base (its block read it): allowed (1) when base is only the block's vectors'
 * buffer and the bytes lie outside the rows the block has still to answer -- doitgen's
 * ``A[r, q, :] = A[r, q, :] @ C`` writes the row just answered; the rows before are then no
 * longer answered. 0: the Python path, whose tiers.settle drops the block. */
static int product_write_ok(PyObject *base, char *lo, char *hi) {
    ProductSlot *s = run_slot(slot_or_none(base, P_captured));
    PyObject *bu = s == NULL ? NULL : PyWeakref_GetObject(s->bu);
    PyObject *bw = s == NULL ? NULL : PyWeakref_GetObject(s->bw);
    if (s == NULL || (bu != base && bw != base))
        return 0;
    npy_intp isz = s->type == NPY_DOUBLE ? 8 : 4, L = (npy_intp)lo, H = (npy_intp)hi;
    if (bu == base) {           /* the lines of the rows still to answer */
        npy_intp a = s->ext + s->next * s->step, z = s->ext + (s->rows - 1) * s->step;
        npy_intp ext = (s->len - 1) * s->su;
        npy_intp plo = (a < z ? a : z) + (ext < 0 ? ext : 0);
        npy_intp phi = (a > z ? a : z) + (ext > 0 ? ext : 0) + isz;
        if (H > plo && L < phi)
            return 0;
    }
    if (bw == base) {           /* the matrix's rows those rows contract over (trmm writes B's
                                 * row i after its product, which the later rows do not read) */
        if (s->r0 < 0)
            return 0;
        npy_intp j0 = s->next, j1 = s->rows - 1;
        npy_intp a0 = s->r0 + j0 * s->dr, a1 = s->r0 + j1 * s->dr;
        npy_intp e0 = a0 + s->K + j0 * s->dK, e1 = a1 + s->K + j1 * s->dK;
        npy_intp kmin = a0 < a1 ? a0 : a1, kmax = e0 > e1 ? e0 : e1;
        npy_intp cols = PyArray_DIM((PyArrayObject *)s->block, 1);
        npy_intp plo = s->mw_ptr + kmin * s->t0 + s->bc0 * s->t1;
        npy_intp phi = s->mw_ptr + (kmax - 1) * s->t0 + (s->bc0 + cols - 1) * s->t1 + isz;
        if (H > plo && L < phi)
            return 0;
    }
    s->floor = s->next;
    return 1;
}

/* The same for a write of ndarray ``dst`` */
static int product_write_ok_array(PyObject *base, PyArrayObject *dst) {
    char *lo, *hi;
    array_extent(dst, &lo, &hi);
    return lo == hi || product_write_ok(base, lo, hi);     /* (empty: nothing written) */
}

/* product_block(slot, spec or None): spec (bu, bw, left, type, su, K, t0, t1, mw_ptr, r0,
 * wptr, n, block, block_ptr, step, rows, bc0) */
static PyObject *product_block(PyObject *Py_UNUSED(mod), PyObject *args) {
    int k;
    PyObject *spec;
    if (!PyArg_ParseTuple(args, "iO", &k, &spec))
        return NULL;
    if (k == -1) {                      /* forget every block and refused site */
        for (int i = 0; i < PRODUCT_SLOTS; i++)
            product_slot_clear(&product_slots[i]);
        memset(refused, 0, sizeof(refused));
        Py_RETURN_NONE;
    }
    if (k < 0 || k >= PRODUCT_SLOTS) {
        PyErr_SetString(PyExc_IndexError, "product_block: slot");
        return NULL;
    }
    ProductSlot *s = &product_slots[k];
    product_slot_clear(s);
    if (spec == Py_None)
        Py_RETURN_NONE;
    PyObject *bu, *bw, *block, *run;
    Py_ssize_t mw, r0, dr, K, dK, wptr, lp, ext, len;
    ProductSlot t = {0};
    if (!PyArg_ParseTuple(spec, "OOiinnnnnnnnnnOnnnnnnO", &bu, &bw, &t.left, &t.type, &t.su,
                          &t.t0, &t.t1, &mw, &r0, &dr, &K, &dK, &wptr, &t.n, &block, &lp,
                          &t.step, &t.rows, &t.bc0, &ext, &len, &run))
        return NULL;
    if (!PyArray_CheckExact(block) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)block) ||
            PyArray_NDIM((PyArrayObject *)block) != 2 ||
            PyArray_DESCR((PyArrayObject *)block)->type_num != t.type || t.step == 0) {
        PyErr_SetString(PyExc_ValueError, "product_block: a C-ordered 2-D block of the type");
        return NULL;
    }
    t.mw_ptr = mw;
    t.r0 = r0;
    t.dr = dr;
    t.K = K;
    t.dK = dK;
    t.wptr = wptr;
    t.block_lp = lp;
    t.ext = ext;
    t.len = len;
    t.bu = PyWeakref_NewRef(bu, NULL);
    t.bw = PyWeakref_NewRef(bw, NULL);
    if (t.bu == NULL || t.bw == NULL) {
        Py_XDECREF(t.bu);
        Py_XDECREF(t.bw);
        return NULL;
    }
    t.block = Py_NewRef(block);
    t.run = Py_NewRef(run);
    t.next = 1;                         /* (row 0: the answer of the call that made it) */
    *s = t;
    Py_RETURN_NONE;
}

/* The answer of a registered block for this call (new ref), or NULL (no error) */
static PyObject *product_fast(PyObject *bu, PyObject *bw, int left, PyArrayObject *u,
                              PyArrayObject *w, int *last) {
    int type = PyArray_DESCR(u)->type_num;
    Py_ssize_t su = PyArray_STRIDE(u, 0), K = PyArray_DIM(u, 0);
    Py_ssize_t t0 = PyArray_STRIDE(w, left ? 0 : 1), t1 = PyArray_STRIDE(w, left ? 1 : 0);
    Py_ssize_t N = PyArray_DIM(w, left ? 1 : 0);
    npy_intp uptr = (npy_intp)PyArray_BYTES(u), wptr = (npy_intp)PyArray_BYTES(w);
    for (int k = 0; k < PRODUCT_SLOTS; k++) {
        ProductSlot *s = &product_slots[k];
        if (s->block == NULL || s->left != left || s->type != type || s->su != su ||
                s->t0 != t0 || s->t1 != t1 || PyWeakref_GetObject(s->bu) != bu ||
                PyWeakref_GetObject(s->bw) != bw)
            continue;
        npy_intp c0, r0 = 0;
        if (s->r0 < 0) {
            if (wptr != s->wptr || N != s->n || K != s->K)
                continue;
            c0 = 0;
        } else {
            npy_intp off = wptr - s->mw_ptr, rest, bad;
            if (off < 0)
                continue;
            if (t0 > t1) {
                r0 = off / t0;
                rest = off % t0;
                c0 = rest / t1;
                bad = rest % t1;
            } else {
                c0 = off / t1;
                rest = off % t1;
                r0 = rest / t0;
                bad = rest % t0;
            }
            if (bad)
                continue;
        }
        npy_intp d = uptr - r0 * su - s->block_lp;     /* (the line's start) */
        if (d % s->step != 0)
            continue;
        npy_intp j = d / s->step;
        if (j < s->floor || j >= s->rows)
            continue;
        if (s->r0 >= 0 && (r0 != s->r0 + j * s->dr || K != s->K + j * s->dK))
            continue;
        if (j == s->rows - 1) {         /* (the last row: Python's, which goes on) */
            *last = 1;
            continue;
        }
        PyArrayObject *b = (PyArrayObject *)s->block;
        npy_intp c = c0 - s->bc0;
        if (c < 0 || c + N > PyArray_DIM(b, 1))
            continue;
        npy_intp dims[1] = {N};
        PyObject *out = PyArray_SimpleNew(1, dims, type);
        if (out == NULL)
            return NULL;
        memcpy(PyArray_BYTES((PyArrayObject *)out),
               PyArray_BYTES(b) + j * PyArray_STRIDE(b, 0) + c * PyArray_ITEMSIZE(b),
               (size_t)N * PyArray_ITEMSIZE(b));
        n_products_fast++;
        if (j + 1 > s->next)
            s->next = j + 1;
        return out;
    }
    return NULL;
}


static long long port_id(PyObject *p) {
    PyObject *id = SLOT(p, P_id);
    long long v = id != NULL && PyLong_Check(id) ? PyLong_AsLongLong(id) : -1;
    if (v == -1 && PyErr_Occurred())
        PyErr_Clear();
    return v;
}

static int product_refused(void **code, int *lasti, PyObject *bu, PyObject *bw) {
    PyFrameObject *f = PyEval_GetFrame();
    if (f == NULL)
        return 1;
    PyCodeObject *c = PyFrame_GetCode(f);
    *code = c;
    Py_DECREF(c);                       /* (only its address is kept) */
    *lasti = PyFrame_GetLasti(f);
    long long iu = port_id(bu), iw = port_id(bw);
    for (int k = 0; k < REFUSED_SITES; k++)
        if (refused[k].code == *code && refused[k].lasti == *lasti && refused[k].bu == iu &&
                refused[k].bw == iw)
            return 1;
    return 0;
}

static PyObject *product_count(PyObject *Py_UNUSED(mod), PyObject *reset) {
    long long n = n_products_fast;
    if (PyObject_IsTrue(reset))
        n_products_fast = 0;
    return PyLong_FromLongLong(n);
}

/* A block's answer (a new float64 or float32 vector of ours) times x, in place */
static PyObject *scale_answer(PyObject *r, double x) {
    if (x == 1.0)
        return r;
    PyArrayObject *o = (PyArrayObject *)r;     /* (x only for float64: scaled_source) */
    double *d = (double *)PyArray_BYTES(o);
    for (npy_intp i = 0, n = PyArray_DIM(o, 0); i < n; i++)
        d[i] *= x;
    return r;
}

/* ``u @ W`` or ``W @ u`` (np.matmul, np.dot) of a vector and a matrix of one float dtype, both
 * Arrays viewing a base port's buffer, the matrix of product_min elements or more: the answer
 * runtime/products.serve has from a block of a loop's products, or NULL (none, no error) */
static PyObject *batched_product(PyObject *ref, PyObject *const *hv, PyObject *const *args) {
    if (!PyTuple_Check(product_refs) || PyTuple_GET_SIZE(product_refs) != 2 ||
            (ref != PyTuple_GET_ITEM(product_refs, 0) && ref != PyTuple_GET_ITEM(product_refs, 1)))
        return NULL;
    if (Py_TYPE(args[0]) != ArrayType || Py_TYPE(args[1]) != ArrayType ||
            !PyArray_CheckExact(hv[0]) || !PyArray_CheckExact(hv[1]))
        return NULL;
    PyArrayObject *a = (PyArrayObject *)hv[0], *b = (PyArrayObject *)hv[1];
    int an = PyArray_NDIM(a), bn = PyArray_NDIM(b);
    if (!((an == 1 && bn == 2) || (an == 2 && bn == 1)))
        return NULL;
    int tn = PyArray_DESCR(a)->type_num;
    if ((tn != NPY_DOUBLE && tn != NPY_FLOAT) || PyArray_DESCR(b)->type_num != tn)
        return NULL;
    int left = an == 1;
    PyArrayObject *w = left ? b : a;
    PyObject *bu = host_base(args[left ? 0 : 1]), *bw = host_base(args[left ? 1 : 0]);
    PyArrayObject *u = left ? a : b;
    double x = 1.0;
    PyObject *src = NULL;                       /* (a new view, ours) */
    if (bu == NULL && tn == NPY_DOUBLE) {       /* ``alpha * A[i, :] @ B``: alpha times A[i]'s */
        src = scaled_source(u, &bu, &x);
        if (src != NULL)
            u = (PyArrayObject *)src;
        else if (PyErr_Occurred())
            return NULL;
    }
    if (bu == NULL || bw == NULL)
        return NULL;
    int last = 0;
    PyObject *r = product_fast(bu, bw, left, u, w, &last);
    if (r != NULL || PyErr_Occurred() || (PyArray_SIZE(w) < product_min && !last)) {
        /* (a block answers a row whatever its size: trmm's last rows are small) */
        Py_XDECREF(src);
        return r == NULL ? NULL : scale_answer(r, x);
    }
    void *code;
    int lasti;
    /* STREAMRT_BATCH_PRODUCTS, read again after any setting changed */
    static long on_epoch = 0;
    static int on = 0;
    if (on_epoch != epoch) {
        PyObject *v = PyObject_GetAttr(settings, s_batch_products);
        on = v == NULL ? -1 : PyObject_IsTrue(v);
        Py_XDECREF(v);
        if (on < 0) {
            Py_XDECREF(src);
            return NULL;
        }
        on_epoch = epoch;
    }
    if (!on || product_refused(&code, &lasti, bu, bw)) {
        Py_XDECREF(src);
        return NULL;
    }
    PyObject *up = PyLong_FromVoidPtr(PyArray_BYTES(u));
    PyObject *wp = PyLong_FromVoidPtr(PyArray_BYTES(w));
    if (up != NULL && wp != NULL)
        r = PyObject_CallFunctionObjArgs(product_serve, (PyObject *)u, (PyObject *)w, bu, bw,
                                         left ? Py_True : Py_False, up, wp, NULL);
    Py_XDECREF(up);
    Py_XDECREF(wp);
    Py_XDECREF(src);
    if (r == Py_False) {                /* not at this site any more */
        refused[n_refused_next].code = code;
        refused[n_refused_next].lasti = lasti;
        refused[n_refused_next].bu = port_id(bu);
        refused[n_refused_next].bw = port_id(bw);
        n_refused_next = (n_refused_next + 1) % REFUSED_SITES;
    }
    if (r == Py_None || r == Py_False) {
        Py_DECREF(r);
        return NULL;
    }
    return r == NULL ? NULL : scale_answer(r, x);
}

/* ref(*args, **kw) on the NumPy tier (vectorcall form); NULL without an error -> Python */
static PyObject *eager_func(PyObject *ref, PyObject *const *args, Py_ssize_t n,
                            PyObject *kwnames, int any_size) {
    Py_ssize_t lim = eager_limit();
    if (lim <= 0)
        return NULL;
    if (any_size)                       /* an intrinsic: recording it would fuse nothing */
        lim = PY_SSIZE_T_MAX;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (n + nkw > 16)
        return NULL;
    for (Py_ssize_t k = 0; k < nkw; k++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), "out") == 0 &&
            args[n + k] != Py_None)
            return NULL;
    Found fd;
    fd.n = 0;
    PyObject *hv[16];
    Py_ssize_t m = 0;
    PyObject *r = NULL;
    for (; m < n + nkw; m++)
        if ((hv[m] = eager_arg(args[m], lim, &fd, 1)) == NULL)
            goto done;
    if (fd.n == 0)
        goto done;
    if (kwnames == NULL && n == 2 && fd.n == 2)
        r = batched_product(ref, hv, args);
    if (r == NULL && !PyErr_Occurred() && kwnames == NULL) {
        r = n == 1 ? direct_reduce(ref, hv[0]) : NULL;
        if (r == NULL && !PyErr_Occurred())
            r = direct_ufunc(ref, hv, n, NULL);
    }
    if (r == NULL && !PyErr_Occurred())
        r = PyObject_Vectorcall(ref, hv, n, kwnames);
    if (r == NULL)
        numpy_error();
    else if ((r = eager_out(r, &fd)) != NULL)
        n_eager++;
done:
    for (Py_ssize_t k = 0; k < m; k++)
        Py_DECREF(hv[k]);
    return r;
}

static PyObject *fast_vectorcall(PyObject *o, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames) {
    Fast *f = (Fast *)o;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    /* (the NumPy tier only: computed operands, which pieces.lower never cuts -- it reads new
     * ports -- so a piecewise operand does not matter here) */
    if (kwnames == NULL && enabled && n >= 1 && Py_TYPE(args[0]) == ArrayType && plain_now()) {
        if (f->kind == F_GETITEM && n == 2) {
            PyObject *r = getitem_fast(args[0], args[1]);
            if (r != NULL || PyErr_Occurred())
                return r;
        } else if (f->kind == F_SETITEM && n == 3) {
            int r = setitem_fast(args[0], args[1], args[2]);
            if (r < 0)
                return NULL;
            if (r > 0)
                Py_RETURN_NONE;
        } else if (f->kind == F_INPLACE && n == 2) {
            PyObject *r = inplace_fast(f, args[0], args[1]);
            if (r != NULL || PyErr_Occurred())
                return r;
        } else if (f->kind == F_UFUNC) {
            PyObject *r = ufunc_fast(args, n);
            if (r != NULL || PyErr_Occurred())
                return r;
        }
    }
    if ((f->kind == F_FUNC || f->kind == F_FUNC_ANY) && enabled && plain_now()) {
        PyObject *r = eager_func(f->name, args, n, kwnames, f->kind == F_FUNC_ANY);
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    return PyObject_Vectorcall(f->func, args, nargsf, kwnames);
}

static PyObject *fast_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    int kind;
    PyObject *name, *func;
    if (!PyArg_ParseTuple(args, "iOO:Fast", &kind, &name, &func))
        return NULL;
    Fast *f = (Fast *)tp->tp_alloc(tp, 0);
    if (f == NULL)
        return NULL;
    f->kind = kind;
    f->name = Py_NewRef(name);
    f->func = Py_NewRef(func);
    f->vectorcall = fast_vectorcall;
    return (PyObject *)f;
}

static int fast_traverse(Fast *f, visitproc visit, void *arg) {
    Py_VISIT(f->func);
    Py_VISIT(f->dict);
    return 0;
}

static int fast_clear(Fast *f) {
    Py_CLEAR(f->ref);
    Py_CLEAR(f->name);
    Py_CLEAR(f->func);
    Py_CLEAR(f->dict);
    return 0;
}

static void fast_dealloc(Fast *f) {
    PyObject_GC_UnTrack(f);
    fast_clear(f);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

/* pickled by reference, as a function: its module and qualified name (update_wrapper's) */
static PyMethodDef fast_methods[] = {
    {"__reduce__", mapfunc_reduce, METH_NOARGS, NULL},
    {NULL}};

static PyTypeObject FastType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "streamrt._native.Fast",
    .tp_basicsize = sizeof(Fast),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Array indexing or an in-place operator on the NumPy tier in C (the Python "
              "method is __wrapped__).",
    .tp_new = fast_new,
    .tp_traverse = (traverseproc)fast_traverse,
    .tp_clear = (inquiry)fast_clear,
    .tp_dealloc = (destructor)fast_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Fast, vectorcall),
    .tp_descr_get = method_get,
    .tp_methods = fast_methods,
    .tp_getset = dict_getset,
    .tp_dictoffset = offsetof(Fast, dict),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
};

/* ---- Array.__del__ ----------------------------------------------------------------------- */
/* array._decref: one Array fewer refers to the port; at zero a view lets go of its base. */
static void decref_port(PyObject *p) {
    while (p != NULL) {
        if (add_nrefs(p, -1) < 0) {
            PyErr_Clear();
            return;
        }
        PyObject *n = SLOT(p, P_nrefs);
        if (count_value(n) > 0 || !streq(SLOT(p, P_kind), s_view))
            return;
        PyObject *ins = SLOT(p, P_inputs);
        if (ins == NULL || !PyTuple_Check(ins) || PyTuple_GET_SIZE(ins) < 1)
            return;
        if (SLOT(p, P_counted) == Py_True) {      /* a NumPy-tier view: the base's count */
            set_slot(p, P_counted, Py_False);
            if (add_int_slot(PyTuple_GET_ITEM(ins, 0), P_eager_views, -1) < 0) {
                PyErr_Clear();
                return;
            }
        }
        p = PyTuple_GET_ITEM(ins, 0);
    }
}

/* Array.__del__: its port lets go (array._decref), or a NumPy-tier view its base. */
static void release_array(PyObject *a) {
    PyObject *port = SLOT(a, A_port);
    if (port != NULL && Py_TYPE(port) == PortType) {
        decref_port(port);
        return;
    }
    PyObject *b = SLOT(a, A_base);
    if (b != NULL && Py_TYPE(b) == PortType) {
        if (add_int_slot(b, P_eager_views, -1) < 0)
            PyErr_Clear();
        decref_port(b);
    }
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
} ArrayDel;

static PyObject *arraydel_vectorcall(PyObject *Py_UNUSED(o), PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL && configured &&
        PyObject_TypeCheck(args[0], ArrayType))
        release_array(args[0]);
    Py_RETURN_NONE;
}

/* Array's tp_finalize, set directly (frontend/native.py installs it): the same as calling
 * its __del__, without looking the method up and calling it for every Array that dies. */
static void array_finalize(PyObject *self) {
    if (configured && PyObject_TypeCheck(self, ArrayType))
        release_array(self);
}

static PyObject *arraydel_new(PyTypeObject *tp, PyObject *Py_UNUSED(args),
                              PyObject *Py_UNUSED(kw)) {
    ArrayDel *d = (ArrayDel *)tp->tp_alloc(tp, 0);
    if (d != NULL)
        d->vectorcall = arraydel_vectorcall;
    return (PyObject *)d;
}

static PyTypeObject ArrayDelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "streamrt.frontend._native.ArrayDel",
    .tp_basicsize = sizeof(ArrayDel),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Array.__del__ in C: the port's reference count (array._decref).",
    .tp_new = arraydel_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(ArrayDel, vectorcall),
    .tp_descr_get = method_get,
};

/* ---- configure ---------------------------------------------------------------------------- */
static int get_type(PyObject *cfg, const char *name, PyTypeObject **out) {
    PyObject *t = PyDict_GetItemString(cfg, name);
    if (t == NULL || !PyType_Check(t)) {
        PyErr_Format(PyExc_KeyError, "configure: %s (a class) missing", name);
        return -1;
    }
    Py_INCREF(t);
    *out = (PyTypeObject *)t;
    return 0;
}

static int get_obj(PyObject *cfg, const char *name, PyObject **out) {
    PyObject *o = PyDict_GetItemString(cfg, name);
    if (o == NULL) {
        PyErr_Format(PyExc_KeyError, "configure: %s missing", name);
        return -1;
    }
    Py_INCREF(o);
    *out = o;
    return 0;
}

static PyObject *configure(PyObject *Py_UNUSED(mod), PyObject *cfg) {
    if (!PyDict_Check(cfg)) {
        PyErr_SetString(PyExc_TypeError, "configure(dict)");
        return NULL;
    }
    if (configured) {
        PyErr_SetString(PyExc_RuntimeError, "configure: called twice");
        return NULL;
    }
    if (get_type(cfg, "Array", &ArrayType) || get_type(cfg, "Port", &PortType) ||
        get_type(cfg, "CallSite", &SiteType) || get_type(cfg, "WorkQueue", &QueueType) ||
        get_obj(cfg, "ids", &ids) || get_obj(cfg, "internal", &internal) ||
        get_obj(cfg, "fast", &fast_memo) || get_obj(cfg, "ufast", &ufast_memo) ||
        get_obj(cfg, "piecewise", &piecewise) || get_obj(cfg, "hooks_dict", &hooks_dict) ||
        get_obj(cfg, "current_queue", &current_queue) ||
        get_obj(cfg, "follow", &follow_table) || get_obj(cfg, "settings", &settings) ||
        get_obj(cfg, "iinfo", &iinfo) || get_obj(cfg, "enqueue_plain", &enqueue_plain) ||
        get_obj(cfg, "key_external", &key_external) || get_obj(cfg, "weak_f", &weak_f) ||
        get_obj(cfg, "weak_i", &weak_i) || get_obj(cfg, "NEW", &st_new) ||
        get_obj(cfg, "DONE", &st_done) || get_obj(cfg, "SUBMITTED", &st_submitted) ||
        get_obj(cfg, "DEAD", &st_dead) || get_obj(cfg, "refs", &refs) ||
        get_obj(cfg, "capture", &capture_more) || get_obj(cfg, "ufunc_ops", &ufunc_ops) ||
        get_obj(cfg, "supported", &supported) || get_obj(cfg, "materialize", &materialize) ||
        get_obj(cfg, "elidable", &elidable) || get_obj(cfg, "sites", &user_codes) ||
        get_obj(cfg, "register", &register_alias) || get_obj(cfg, "product", &product_serve) ||
        get_obj(cfg, "product_refs", &product_refs))
        return NULL;
    if (s_out_kw == NULL && (s_out_kw = Py_BuildValue("(s)", "out")) == NULL)
        return NULL;
    PyObject *ne = PyDict_GetItemString(cfg, "now_elements");
    PyObject *mc = PyDict_GetItemString(cfg, "max_site_codes");
    PyObject *pm = PyDict_GetItemString(cfg, "product_min");
    if (ne == NULL || mc == NULL || pm == NULL || (now_elements = PyLong_AsSsize_t(ne)) == -1 ||
            (maxcodes = PyLong_AsSsize_t(mc)) == -1 || (product_min = PyLong_AsSsize_t(pm)) == -1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_KeyError, "configure: now_elements, max_site_codes, "
                            "product_min");
        return NULL;
    }
    if (!PyDict_Check(internal) || !PyDict_Check(user_codes) || !PyDict_Check(fast_memo) ||
        !PyDict_Check(ufast_memo) ||
        !PyDict_Check(refs) ||
        !PyDict_Check(piecewise) || !PyDict_Check(hooks_dict) || !PyDict_Check(iinfo) ||
        !PyDict_Check(follow_table) ||
        !PyIter_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "configure: unexpected object types");
        return NULL;
    }
    struct { PyTypeObject **tp; const char *name; Py_ssize_t *off; } slots[] = {
        {&ArrayType, "_p", &A_port}, {&ArrayType, "_v", &A_value}, {&ArrayType, "_b", &A_base},
        {&PortType, "id", &P_id}, {&PortType, "kind", &P_kind}, {&PortType, "op", &P_op},
        {&PortType, "dtype", &P_dtype}, {&PortType, "shape", &P_shape},
        {&PortType, "inputs", &P_inputs}, {&PortType, "params", &P_params},
        {&PortType, "site", &P_site}, {&PortType, "queue", &P_queue},
        {&PortType, "value", &P_value}, {&PortType, "state", &P_state},
        {&PortType, "error", &P_error}, {&PortType, "nrefs", &P_nrefs},
        {&PortType, "scalar", &P_scalar}, {&PortType, "loop_dtype", &P_loop_dtype},
        {&PortType, "ref", &P_ref}, {&PortType, "holders", &P_holders},
        {&PortType, "captured", &P_captured}, {&PortType, "eager_views", &P_eager_views},
        {&PortType, "counted", &P_counted},
        {&SiteType, "code", &S_code}, {&SiteType, "lasti", &S_lasti},
        {&SiteType, "_lineno", &S_lineno}, {&SiteType, "now", &S_now},
        {&QueueType, "entries", &Q_entries}, {&QueueType, "lock", &Q_lock},
        {&QueueType, "pending_computes", &Q_pending}, {&QueueType, "keyparts", &Q_keyparts},
        {&QueueType, "kports", &Q_kports}, {&QueueType, "num", &Q_num},
        {&QueueType, "recorded", &Q_recorded}, {&QueueType, "max_elements", &Q_max_elements},
        {&QueueType, "_shape", &Q_shape}, {&QueueType, "limit", &Q_limit},
        {&QueueType, "epoch", &Q_epoch}, {&QueueType, "follow", &Q_follow},
        {&QueueType, "fpos", &Q_fpos}, {&QueueType, "recording", &Q_recording},
        {&QueueType, "eager_limit", &Q_eager_limit},
    };
    for (size_t k = 0; k < sizeof(slots) / sizeof(slots[0]); k++)
        if (slot_offset(*slots[k].tp, slots[k].name, slots[k].off) < 0)
            return NULL;
#define INTERN(var, s) if ((var = PyUnicode_InternFromString(s)) == NULL) return NULL
    INTERN(s_map, "map"); INTERN(s_scalar, "scalar"); INTERN(s_view, "view");
    INTERN(s_const, "const"); INTERN(s_compute, "compute"); INTERN(s_f, "f");
    INTERN(s_i, "i"); INTERN(s_S, "S"); INTERN(s_power, "power"); INTERN(s_multiply, "multiply");
    INTERN(s_on_record, "on_record"); INTERN(s_queue_threshold, "queue_threshold");
    INTERN(s_eager_elements, "eager_elements");
    INTERN(s_batch_products, "batch_products");
    INTERN(s_queue_key, "streamrt.work_queue");
#undef INTERN
    if ((zero = PyLong_FromLong(0)) == NULL ||
        (empty = PyTuple_New(0)) == NULL)
        return NULL;
    configured = enabled = 1;
    Py_RETURN_NONE;
}

/* Array's tp_dealloc (install_finalizer): what CPython's generic subtype_dealloc does for it
 * -- its finalizer, its weak references, its three slots -- without the generic path's
 * finalizer call protocol (a temporary resurrection) and slot walk: an Array dies with
 * nearly every op on the NumPy tier. For a subclass of Array, CPython's subtype_dealloc
 * runs first (the subclass's own slots, the finalizer) and calls this as the base's
 * dealloc, with the object tracked again; the finalizer has run then (the GC's flag). */
static void array_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    int finalized = PyObject_GC_IsFinalized(self);
    if (!finalized && configured) {
        if (PyErr_Occurred()) {
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);     /* (a dealloc must leave the error indicator) */
            release_array(self);
            PyErr_Restore(et, ev, tb);
        } else {
            release_array(self);            /* (it clears what it raises) */
        }
    }
    if (ArrayType->tp_weaklistoffset > 0 &&
        *(PyObject **)((char *)self + ArrayType->tp_weaklistoffset) != NULL)
        PyObject_ClearWeakRefs(self);
    PyObject **slots[3] = {(PyObject **)((char *)self + A_port),
                           (PyObject **)((char *)self + A_value),
                           (PyObject **)((char *)self + A_base)};
    for (int k = 0; k < 3; k++)
        Py_CLEAR(*slots[k]);
#if NFREE > 0
    if (tp == ArrayType && n_free < NFREE && !finalized) {
        /* (its type reference stays with it; not one the GC finalized: the flag would stay
         * in its GC header, and its next life's release be skipped) */
        free_arrays[n_free++] = self;
        return;
    }
#endif
    tp->tp_free(self);
    Py_DECREF(tp);          /* (a heap type's instances hold it; subtype_dealloc leaves this
                             * to a heap base's dealloc) */
}

static PyObject *install_finalizer(PyObject *Py_UNUSED(mod), PyObject *Py_UNUSED(unused)) {
    if (!configured || ArrayType->tp_finalize == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "install_finalizer: not configured, or Array has "
                        "no __del__");
        return NULL;
    }
    if (!(ArrayType->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
            !(ArrayType->tp_flags & Py_TPFLAGS_HAVE_GC) || ArrayType->tp_dictoffset != 0) {
        PyErr_SetString(PyExc_RuntimeError, "install_finalizer: Array is not the slotted "
                        "heap type this module expects");
        return NULL;
    }
    ArrayType->tp_finalize = array_finalize;
    ArrayType->tp_dealloc = array_dealloc;
    Py_RETURN_NONE;
}

/* ---- the flush's loops over its entries ----------------------------------------------- */
/* cscheduler: tuple([p.nrefs <= 0 for p in kports if p.state == NEW]) */
static PyObject *released_flags(PyObject *Py_UNUSED(mod), PyObject *kports) {
    if (!configured || !PyList_CheckExact(kports)) {
        PyErr_SetString(PyExc_TypeError, "released_flags(list of ports), once configured");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(kports), m = 0;
    PyObject *out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *p = PyList_GET_ITEM(kports, k);
        if (Py_TYPE(p) != PortType) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "released_flags: not a port");
            return NULL;
        }
        int isnew = PyObject_RichCompareBool(SLOT(p, P_state), st_new, Py_EQ);
        if (isnew < 0) {
            Py_DECREF(out);
            return NULL;
        }
        if (!isnew)
            continue;
        long r = PyLong_AsLong(SLOT(p, P_nrefs));
        if (r == -1 && PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, m++, Py_NewRef(r <= 0 ? Py_True : Py_False));
    }
    if (_PyTuple_Resize(&out, m) < 0)
        return NULL;
    return out;
}

/* cscheduler._unwritten: the flushed ports no program writes -- views follow their base, the
 * rest were dead or fused away. */
static PyObject *unwritten(PyObject *Py_UNUSED(mod), PyObject *entries) {
    if (!configured || !PyList_CheckExact(entries)) {
        PyErr_SetString(PyExc_TypeError, "unwritten(list of entries), once configured");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(entries); k++) {
        PyObject *e = PyList_GET_ITEM(entries, k);
        if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 2 ||
            !streq(PyTuple_GET_ITEM(e, 0), s_compute))
            continue;
        PyObject *p = PyTuple_GET_ITEM(e, 1);
        if (Py_TYPE(p) != PortType)
            continue;
        int isnew = PyObject_RichCompareBool(SLOT(p, P_state), st_new, Py_EQ);
        if (isnew < 0)
            return NULL;
        if (!isnew)
            continue;
        PyObject *to = st_dead;
        if (streq(SLOT(p, P_kind), s_view)) {
            PyObject *base = PyTuple_GET_ITEM(SLOT(p, P_inputs), 0);
            int dead = PyObject_RichCompareBool(SLOT(base, P_state), st_dead, Py_EQ);
            if (dead < 0)
                return NULL;
            to = dead ? st_dead : st_submitted;
        }
        set_slot(p, P_state, to);
    }
    Py_RETURN_NONE;
}

/* array._enqueue_plain for a port the Python path built (a reduction, an intrinsic, a
 * view, ...): the same work-queue and key entries, in C; the unusual cases in Python. */
static PyObject *py_enqueue(PyObject *Py_UNUSED(mod), PyObject *port) {
    /* (whether to record piece by piece was decided before, in array._enqueue) */
    if (!enabled || Py_TYPE(port) != PortType || !plain_now())
        return call_enqueue(port);
    return enqueue(port);
}

static PyObject *settings_changed(PyObject *Py_UNUSED(mod), PyObject *Py_UNUSED(unused)) {
    epoch++;
    for (int k = 0; k < PRODUCT_SLOTS; k++)     /* (STREAMRT_BATCH_PRODUCTS may be off now) */
        product_slot_clear(&product_slots[k]);
    Py_RETURN_NONE;
}

/* The interface version frontend/native.py expects: a build older than its source (an
 * editable install not rebuilt after a pull) is then not used. */
#define NATIVE_ABI 14

static PyObject *enable(PyObject *Py_UNUSED(mod), PyObject *on) {
    int v = PyObject_IsTrue(on);
    if (v < 0)
        return NULL;
    PyObject *was = enabled ? Py_True : Py_False;
    enabled = v && configured;
    return Py_NewRef(was);
}

/* f(): valgrind --tool=callgrind --toggle-collect=streamrt_measured counts exactly the
 * instructions of the call (benchmarks/overhead.py --callgrind). */
__attribute__((noinline)) PyObject *streamrt_measured(PyObject *Py_UNUSED(mod), PyObject *f) {
    return PyObject_CallNoArgs(f);
}

static PyObject *native_count(PyObject *Py_UNUSED(mod), PyObject *reset) {
    long long n = n_native;
    if (PyObject_IsTrue(reset))
        n_native = 0;
    return PyLong_FromLongLong(n);
}

static PyObject *eager_count(PyObject *mod, PyObject *reset) {
    long long n = n_eager;
    if (PyObject_IsTrue(reset))
        n_eager = 0;
    return PyLong_FromLongLong(n);
}

/* ufunc_into(uf, args, out, cut=True): ``uf(*args, out=out)`` by the ufunc's own loop
 * (_loops.c), cut over two threads when long (split_min) and ``cut``: ``out``, or None when
 * the call is not one _loops.c takes (the caller then calls NumPy). The interpreter's calls
 * (backends/base.py) are not counted as the NumPy tier's ops. */
static PyObject *py_ufunc_into(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 3 || nargs > 4 || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "ufunc_into(uf, args: tuple, out, cut=True)");
        return NULL;
    }
    int cut = nargs == 4 ? PyObject_IsTrue(args[3]) : 1;
    if (cut < 0)
        return NULL;
    long long saved = n_direct;
    split_paused = !cut;
    PyObject *r = direct_ufunc(args[0], &PyTuple_GET_ITEM(args[1], 0),
                               PyTuple_GET_SIZE(args[1]), args[2]);
    split_paused = 0;
    n_direct = saved;
    if (r == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return r;
}

static PyObject *split_config(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "split_config(n, wait=False, delay_us=0)");
        return NULL;
    }
    long delay = nargs == 3 ? PyLong_AsLong(args[2]) : 0;
    if (delay == -1 && PyErr_Occurred())
        return NULL;
    split_delay_us = delay < 0 ? 0 : delay > 100000 ? 100000 : (int)delay;
    Py_ssize_t n = PyLong_AsSsize_t(args[0]);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    int wait = nargs >= 2 ? PyObject_IsTrue(args[1]) : 0;
    if (wait < 0)
        return NULL;
    split_min = n < 0 ? 0 : n;
    split_wait = wait;
    split_reset();
    Py_RETURN_NONE;
}

static PyObject *split_count(PyObject *mod, PyObject *reset) {
    long long n = n_split;
    if (PyObject_IsTrue(reset))
        n_split = 0;
    return PyLong_FromLongLong(n);
}

/* park_helper(): the cut loops' helper thread stops spinning now and sleeps until the next
 * cut loop (a compiled parallel kernel is about to start: its OpenMP threads need the cores) */
static PyObject *park_helper(PyObject *mod, PyObject *Py_UNUSED(ignored)) {
    split_park();
    Py_RETURN_NONE;
}

/* split_state(skip=None): (loops left to run on one thread, the next backing off); tests */
static PyObject *split_state(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "split_state(skip=None)");
        return NULL;
    }
    if (nargs == 1 && args[0] != Py_None) {
        long k = PyLong_AsLong(args[0]);
        if (k == -1 && PyErr_Occurred())
            return NULL;
        split_skip = k < 0 ? 0 : (int)k;
    }
    return Py_BuildValue("(ii)", split_skip, split_backoff);
}

static PyObject *split_lost_count(PyObject *mod, PyObject *reset) {
    long long n = n_split_lost;
    if (PyObject_IsTrue(reset))
        n_split_lost = 0;
    return PyLong_FromLongLong(n);
}

static PyObject *direct_count(PyObject *mod, PyObject *reset) {
    long long n = n_direct;
    if (PyObject_IsTrue(reset))
        n_direct = 0;
    return PyLong_FromLongLong(n);
}

/* ---- Array's number slots ------------------------------------------------------------------
 * CPython fills a Python class's number slots with generic functions that look the
 * operator's method up (its MRO cache), bind it and call it, for both operand orders: ~20 ns
 * of the ~90 an Array operator on the NumPy tier adds to NumPy's own call. install_slots
 * puts these in ArrayType's slots instead: each calls the operator's BinOp (the same object
 * the method is) for the operand that is an exact Array -- the left one's forward method,
 * else the right one's reflected one, as the generic slot would. A subclass of Array gets
 * CPython's generic slots when it is created (its methods are not wrapper descriptors), so
 * only exact Arrays come here as the operand whose slot runs. Setting an operator on Array
 * afterwards resets its slot to the generic one (CPython's update_slot). */
enum { NB_ADD, NB_SUB, NB_MUL, NB_TRUEDIV, NB_FLOORDIV, NB_MOD, NB_AND, NB_OR, NB_XOR,
       NB_LSHIFT, NB_RSHIFT, NB_COUNT };
static PyObject *nb_ops[NB_COUNT][2];      /* the BinOps: forward, reflected */
static int slots_installed = 0;            /* install_slots has run: nb_ops and the rest set */

static inline PyObject *array_nb(int k, PyObject *a, PyObject *b) {
    if (Py_TYPE(a) == ArrayType)
        return binop_call2((BinOp *)nb_ops[k][0], a, b);
    if (Py_TYPE(b) == ArrayType)
        return binop_call2((BinOp *)nb_ops[k][1], b, a);
    Py_RETURN_NOTIMPLEMENTED;
}

#define NB_SLOT(fn, k) static PyObject *fn(PyObject *a, PyObject *b) { return array_nb(k, a, b); }
NB_SLOT(nb_add, NB_ADD)
NB_SLOT(nb_sub, NB_SUB)
NB_SLOT(nb_mul, NB_MUL)
NB_SLOT(nb_truediv, NB_TRUEDIV)
NB_SLOT(nb_floordiv, NB_FLOORDIV)
NB_SLOT(nb_mod, NB_MOD)
NB_SLOT(nb_and, NB_AND)
NB_SLOT(nb_or, NB_OR)
NB_SLOT(nb_xor, NB_XOR)
NB_SLOT(nb_lshift, NB_LSHIFT)
NB_SLOT(nb_rshift, NB_RSHIFT)

/* ---- the float64 element ------------------------------------------------------------------
 * An element read from a float64 Array on the NumPy tier (``A[i, k]``), or a float64 scalar
 * a NumPy function returns there, is a NumPy float64 -- of this subclass of it.
 * ``A[i, k] * A[:i+1, k]`` with a plain np.float64 on the left goes through NumPy's scalar
 * operator, its array operator, the ufunc and its override protocol before it reaches
 * Array.__array_ufunc__: ~400 ns over the same product with the operands swapped (a
 * PolyBench-style triangular loop spent a third of its time there). This subclass's + - * /
 * hand an Array operand straight to Array's operator, and otherwise are np.float64's, their
 * float64 results of this type again (alpha * A[i, k], -alpha, abs(x) keep it). Everything
 * else is np.float64's: value, dtype, repr, hash, pickling (to a plain np.float64);
 * ``type(x) is np.float64`` is False, isinstance holds. */
static PyNumberMethods f64_number;

/* A float64 element of value ``v``: of F64Type once the slots are installed, a plain
 * np.float64 before (new ref). */
static PyObject *new_f64(double v) {
    PyObject *w = slots_installed ? F64Type.tp_alloc(&F64Type, 0) : PyArrayScalar_New(Double);
    if (w != NULL)
        PyArrayScalar_VAL(w, Double) = v;
    return w;
}

/* ``r`` (stolen) as F64Type when it is a plain np.float64 and the slots are installed */
static PyObject *wrap_f64(PyObject *r) {
    if (r == NULL || Py_TYPE(r) != &PyDoubleArrType_Type || !slots_installed)
        return r;
    PyObject *w = new_f64(PyArrayScalar_VAL(r, Double));
    Py_DECREF(r);
    return w;
}

static inline PyObject *f64_nb(int k, binaryfunc base, PyObject *a, PyObject *b) {
    if (slots_installed) {
        if (Py_TYPE(b) == ArrayType)
            return binop_call2((BinOp *)nb_ops[k][1], b, a);
        if (Py_TYPE(a) == ArrayType)
            return binop_call2((BinOp *)nb_ops[k][0], a, b);
    }
    return wrap_f64(base(a, b));
}

#define F64_SLOT(fn, k, slot) static PyObject *fn(PyObject *a, PyObject *b) { \
    return f64_nb(k, PyDoubleArrType_Type.tp_as_number->slot, a, b); }
F64_SLOT(f64_add, NB_ADD, nb_add)
F64_SLOT(f64_sub, NB_SUB, nb_subtract)
F64_SLOT(f64_mul, NB_MUL, nb_multiply)
F64_SLOT(f64_truediv, NB_TRUEDIV, nb_true_divide)
#define F64_UNARY(fn, slot) static PyObject *fn(PyObject *a) { \
    return wrap_f64(PyDoubleArrType_Type.tp_as_number->slot(a)); }
F64_UNARY(f64_neg, nb_negative)
F64_UNARY(f64_pos, nb_positive)
F64_UNARY(f64_abs, nb_absolute)

static PyTypeObject F64Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "streamrt.float64",
    .tp_basicsize = sizeof(PyDoubleScalarObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A NumPy float64 read from a streamrt Array: np.float64 in every respect, but "
              "an Array operand of + - * / goes straight to the Array's operator.",
    .tp_as_number = &f64_number,
};

/* comparisons: tp_richcompare, whose first operand is always the object whose slot runs */
static PyObject *cmp_ops[6];    /* by Py_LT .. Py_GE */

static PyObject *array_richcompare(PyObject *self, PyObject *other, int op) {
    return binop_call2((BinOp *)cmp_ops[op], self, other);
}

/* indexing (mp_subscript, mp_ass_subscript) and the in-place operators: their Fast objects
 * (the self operand is the object whose slot runs) */
static PyObject *getitem_op, *setitem_op;
static PyObject *array_subscript(PyObject *self, PyObject *key) {
    PyObject *args[2] = {self, key};
    return fast_vectorcall(getitem_op, args, 2, NULL);
}

static int array_ass_subscript(PyObject *self, PyObject *key, PyObject *value) {
    PyObject *r;
    if (value == NULL) {            /* del a[key]: the method, as the generic slot calls it */
        r = PyObject_CallMethod(self, "__delitem__", "O", key);
    } else {
        PyObject *args[3] = {self, key, value};
        r = fast_vectorcall(setitem_op, args, 3, NULL);
    }
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

enum { IP_ADD, IP_SUB, IP_MUL, IP_TRUEDIV, IP_FLOORDIV, IP_MOD, IP_AND, IP_OR, IP_XOR,
       IP_LSHIFT, IP_RSHIFT, IP_COUNT };
static PyObject *ip_ops[IP_COUNT];
#define IP_SLOT(fn, k) static PyObject *fn(PyObject *a, PyObject *b) { \
    PyObject *args[2] = {a, b}; \
    return fast_vectorcall(ip_ops[k], args, 2, NULL); }
IP_SLOT(ip_add, IP_ADD)
IP_SLOT(ip_sub, IP_SUB)
IP_SLOT(ip_mul, IP_MUL)
IP_SLOT(ip_truediv, IP_TRUEDIV)
IP_SLOT(ip_floordiv, IP_FLOORDIV)
IP_SLOT(ip_mod, IP_MOD)
IP_SLOT(ip_and, IP_AND)
IP_SLOT(ip_or, IP_OR)
IP_SLOT(ip_xor, IP_XOR)
IP_SLOT(ip_lshift, IP_LSHIFT)
IP_SLOT(ip_rshift, IP_RSHIFT)

/* Each slot install_slots fills: its method names, where the slot is, its C function. */
#define NB_AT(f) offsetof(PyNumberMethods, f)
static const struct { const char *fwd, *refl; size_t at; binaryfunc fn; } nb_table[NB_COUNT] = {
    [NB_ADD] = {"__add__", "__radd__", NB_AT(nb_add), nb_add},
    [NB_SUB] = {"__sub__", "__rsub__", NB_AT(nb_subtract), nb_sub},
    [NB_MUL] = {"__mul__", "__rmul__", NB_AT(nb_multiply), nb_mul},
    [NB_TRUEDIV] = {"__truediv__", "__rtruediv__", NB_AT(nb_true_divide), nb_truediv},
    [NB_FLOORDIV] = {"__floordiv__", "__rfloordiv__", NB_AT(nb_floor_divide), nb_floordiv},
    [NB_MOD] = {"__mod__", "__rmod__", NB_AT(nb_remainder), nb_mod},
    [NB_AND] = {"__and__", "__rand__", NB_AT(nb_and), nb_and},
    [NB_OR] = {"__or__", "__ror__", NB_AT(nb_or), nb_or},
    [NB_XOR] = {"__xor__", "__rxor__", NB_AT(nb_xor), nb_xor},
    [NB_LSHIFT] = {"__lshift__", "__rlshift__", NB_AT(nb_lshift), nb_lshift},
    [NB_RSHIFT] = {"__rshift__", "__rrshift__", NB_AT(nb_rshift), nb_rshift}};
static const struct { const char *name; size_t at; binaryfunc fn; } ip_table[IP_COUNT] = {
    [IP_ADD] = {"__iadd__", NB_AT(nb_inplace_add), ip_add},
    [IP_SUB] = {"__isub__", NB_AT(nb_inplace_subtract), ip_sub},
    [IP_MUL] = {"__imul__", NB_AT(nb_inplace_multiply), ip_mul},
    [IP_TRUEDIV] = {"__itruediv__", NB_AT(nb_inplace_true_divide), ip_truediv},
    [IP_FLOORDIV] = {"__ifloordiv__", NB_AT(nb_inplace_floor_divide), ip_floordiv},
    [IP_MOD] = {"__imod__", NB_AT(nb_inplace_remainder), ip_mod},
    [IP_AND] = {"__iand__", NB_AT(nb_inplace_and), ip_and},
    [IP_OR] = {"__ior__", NB_AT(nb_inplace_or), ip_or},
    [IP_XOR] = {"__ixor__", NB_AT(nb_inplace_xor), ip_xor},
    [IP_LSHIFT] = {"__ilshift__", NB_AT(nb_inplace_lshift), ip_lshift},
    [IP_RSHIFT] = {"__irshift__", NB_AT(nb_inplace_rshift), ip_rshift}};
static const char *cmp_names[6] = {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"};

/* Array.<name> into *slot (a new reference) when it is of type ``tp``; -1 with an error */
static int take_method(const char *name, PyTypeObject *tp, PyObject **slot) {
    PyObject *f = PyDict_GetItemString(ArrayType->tp_dict, name);
    if (f == NULL || Py_TYPE(f) != tp) {
        PyErr_Format(PyExc_RuntimeError, "install_slots: Array.%s is not a %s", name,
                     tp->tp_name);
        return -1;
    }
    Py_XSETREF(*slot, Py_NewRef(f));
    return 0;
}

static PyObject *install_slots(PyObject *Py_UNUSED(mod), PyObject *Py_UNUSED(unused)) {
    PyNumberMethods *nb = ArrayType != NULL ? ArrayType->tp_as_number : NULL;
    PyMappingMethods *mp = ArrayType != NULL ? ArrayType->tp_as_mapping : NULL;
    if (!configured || nb == NULL || mp == NULL ||
            !(ArrayType->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        PyErr_SetString(PyExc_RuntimeError, "install_slots: not configured");
        return NULL;
    }
    /* (every method first: a missing one leaves every slot CPython's) */
    for (int k = 0; k < NB_COUNT; k++)
        if (take_method(nb_table[k].fwd, &BinOpType, &nb_ops[k][0]) < 0 ||
                take_method(nb_table[k].refl, &BinOpType, &nb_ops[k][1]) < 0)
            return NULL;
    for (int op = 0; op < 6; op++)
        if (take_method(cmp_names[op], &BinOpType, &cmp_ops[op]) < 0)
            return NULL;
    for (int k = 0; k < IP_COUNT; k++)
        if (take_method(ip_table[k].name, &FastType, &ip_ops[k]) < 0)
            return NULL;
    if (take_method("__getitem__", &FastType, &getitem_op) < 0 ||
            take_method("__setitem__", &FastType, &setitem_op) < 0)
        return NULL;
    for (int k = 0; k < NB_COUNT; k++)
        *(binaryfunc *)((char *)nb + nb_table[k].at) = nb_table[k].fn;
    for (int k = 0; k < IP_COUNT; k++)
        *(binaryfunc *)((char *)nb + ip_table[k].at) = ip_table[k].fn;
    ArrayType->tp_richcompare = array_richcompare;
    mp->mp_subscript = array_subscript;
    mp->mp_ass_subscript = array_ass_subscript;
    slots_installed = 1;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"transpose_now", transpose_now, METH_O,
     "transpose_now(a): a.T of a computed Array on the NumPy tier, or None."},
    {"ufunc_into", (PyCFunction)(void (*)(void))py_ufunc_into, METH_FASTCALL,
     "ufunc_into(uf, args, out, cut=True): uf(*args, out=out) by its own loop, cut over two "
     "threads when long and cut; out, or None when not taken (NumPy's call then runs)."},
    {"product_block", product_block, METH_VARARGS, "product_block(slot, spec or None): a "
     "block of products (runtime/products.py) answers the calls it covers; (-1, None): "
     "forget the blocks and the refused sites"},
    {"product_count", product_count, METH_O, "product_count(reset): products answered from "
     "a block here"},
    {"split_config", (PyCFunction)(void (*)(void))split_config, METH_FASTCALL,
     "split_config(n, wait=False, delay_us=0): loops of n elements or more run on two "
     "threads (0: never); wait: the helper always runs its part (tests: deterministic), never "
     "taken back; delay_us: the helper sleeps first (tests: its core busy)."},
    {"split_count", split_count, METH_O, "split_count(reset): loops cut over two threads."},
    {"park_helper", park_helper, METH_NOARGS, "park_helper(): the cut loops' helper thread "
     "stops spinning and sleeps until the next cut loop."},
    {"split_state", (PyCFunction)(void (*)(void))split_state, METH_FASTCALL,
     "split_state(skip=None): (cut loops left to run on one thread, the next backing off)."},
    {"split_lost_count", split_lost_count, METH_O, "split_lost_count(reset): cut loops whose "
     "helper half ended after twice the caller's (the next ones ran on one thread)."},
    {"direct_count", direct_count, METH_O, "direct_count(reset): NumPy-tier ufunc calls whose "
     "loop the C path called itself (_loops.c)."},
    {"eager_count", eager_count, METH_O, "eager_count(reset): ops the C path ran on the NumPy "
     "tier."},
    {"configure", configure, METH_O, "Give the C record path the classes, memo dicts and "
     "functions of the Python one (frontend/native.py); once."},
    {"enable", enable, METH_O, "Switch the C path on or off (off: every call takes the Python "
     "path); returns the previous state."},
    {"install_finalizer", install_finalizer, METH_NOARGS, "Array's tp_finalize: the C "
     "__del__ (after Array.__del__ is the ArrayDel)."},
    {"install_slots", install_slots, METH_NOARGS, "Array's operator, comparison, in-place "
     "and indexing slots in C, calling its BinOps and Fast objects (after they are set)."},
    {"enqueue", py_enqueue, METH_O, "array._enqueue_plain in C (the port joins this thread's "
     "work queue; an Array of it comes back)."},
    {"settings_changed", settings_changed, METH_NOARGS, "A setting changed (config.py): work "
     "queues read their threshold again."},
    {"released_flags", released_flags, METH_O, "The trace key's released flags of a flush's "
     "numbered ports (cscheduler._program_sequence)."},
    {"unwritten", unwritten, METH_O, "cscheduler._unwritten"},
    {"measured", streamrt_measured, METH_O, "f(), in the C function streamrt_measured (for "
     "callgrind's --toggle-collect: instruction counts of one call)."},
    {"native_count", native_count, METH_O, "native_count(reset): ops recorded entirely in C."},
    {NULL}};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "streamrt.frontend._native",
    "The record path of the hot Array operators and map functions in C.", -1, methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
    import_array();
    if (direct_init() < 0)
        return NULL;
    f64_number.nb_add = f64_add;
    f64_number.nb_subtract = f64_sub;
    f64_number.nb_multiply = f64_mul;
    f64_number.nb_true_divide = f64_truediv;
    f64_number.nb_negative = f64_neg;          /* (-alpha keeps the type: durbin's alpha) */
    f64_number.nb_positive = f64_pos;
    f64_number.nb_absolute = f64_abs;
    F64Type.tp_base = &PyDoubleArrType_Type;
    if (PyType_Ready(&F64Type) < 0)
        return NULL;
    if (PyType_Ready(&BinOpType) < 0 || PyType_Ready(&MapFuncType) < 0 ||
        PyType_Ready(&MapMethodType) < 0 ||
        PyType_Ready(&FastType) < 0 ||
        PyType_Ready(&ArrayDelType) < 0 || PyType_Ready(&QueueLockType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "ABI", NATIVE_ABI) < 0 ||
        PyModule_AddObjectRef(m, "BinOp", (PyObject *)&BinOpType) < 0 ||
        PyModule_AddObjectRef(m, "MapFunc", (PyObject *)&MapFuncType) < 0 ||
        PyModule_AddObjectRef(m, "MapMethod", (PyObject *)&MapMethodType) < 0 ||
        PyModule_AddObjectRef(m, "Fast", (PyObject *)&FastType) < 0 ||
        PyModule_AddObjectRef(m, "float64", (PyObject *)&F64Type) < 0 ||
        PyModule_AddObjectRef(m, "ArrayDel", (PyObject *)&ArrayDelType) < 0 ||
        PyModule_AddObjectRef(m, "QueueLock", (PyObject *)&QueueLockType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
