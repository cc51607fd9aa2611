/* streamrt.frontend._native: the record path of the hot operators in C -- an Array operator or a
 * one-operand map function call in, the same port, work-queue entry, trace-key entry and
 * Array the Python path (frontend/array.py, scheduler/workqueue.py, caches/keys.py) makes
 * out.
 *
 * Only the common case is here: an Array (op) Array of the same shape or (op) a Python
 * float/int whose dtype combination the Python path has validated before (its memo dicts),
 * called from user code, with no piecewise (rolled) array alive, no debugger hook, below
 * the queue threshold.  Everything else calls the Python implementation, which stays the
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
static Py_ssize_t A_port;
static Py_ssize_t P_id, P_kind, P_op, P_dtype, P_shape, P_inputs, P_params, P_site, P_queue,
    P_value, P_state, P_error, P_nrefs, P_scalar, P_loop_dtype, P_ref, P_holders;
static Py_ssize_t S_code, S_lasti, S_lineno;
static Py_ssize_t Q_entries, Q_lock, Q_pending, Q_keyparts, Q_kports, Q_num, Q_recorded,
    Q_max_elements, Q_shape, Q_limit, Q_epoch, Q_follow, Q_fpos;
static PyObject *ids;            /* itertools.count: port ids, shared with Port.__init__ */
static PyObject *internal;       /* errors._INTERNAL: code -> True (streamrt/NumPy) / False */
static PyObject *fast_memo;      /* array._FAST: (op, dtype, dtype-or-kind, reflected) -> dts */
static PyObject *ufast_memo;     /* array._UFAST: (op, dtype) -> (out, loop) dtypes */
static PyObject *piecewise;      /* pieces.PIECEWISE.data: non-empty -> the Python path */
static PyObject *hooks_dict;     /* core/hooks.py module dict (on_record) */
static PyObject *current_queue;  /* workqueue.current_queue */
static PyObject *settings;       /* config.settings (queue_threshold) */
static PyObject *iinfo;          /* array._IINFO: dtype -> (min, max) */
static PyObject *enqueue_plain;  /* array._enqueue_plain: the Python enqueue */
static PyObject *key_external;   /* keys._external */
static PyObject *weak_f, *weak_i;/* the params of a Python float / int operand's port */
static PyObject *s_map, *s_scalar, *s_view, *s_const, *s_compute, *s_f, *s_i, *s_S, *s_power,
    *s_on_record, *s_queue_threshold, *s_queue_key;
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
        PyObject *intl = PyDict_GetItemWithError(internal, (PyObject *)code);
        if (intl != Py_False) {          /* streamrt's own code, or not seen yet */
            Py_DECREF(code);
            return NULL;
        }
        per = PyDict_New();
        if (per == NULL) {
            Py_DECREF(code);
            return NULL;
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
    set_slot(p, P_state, state);
    return p;
}

static int add_nrefs(PyObject *port, long d) {
    PyObject *n = SLOT(port, P_nrefs);
    long v = n != NULL ? PyLong_AsLong(n) : 0;
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

/* array._wrap: a new Array referring to ``port`` (steals nothing). */
static PyObject *wrap(PyObject *port) {
    PyObject *a = ArrayType->tp_alloc(ArrayType, 0);
    if (a == NULL)
        return NULL;
    if (add_nrefs(port, 1) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    set_slot(a, A_port, port);
    return a;
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
    /* the queue threshold (a per-thread setting), read again after any setting changed */
    long qe = PyLong_AsLong(SLOT(q, Q_epoch));
    if (qe == -1 && PyErr_Occurred())
        goto fail;
    if (qe != epoch) {
        PyObject *th = PyObject_GetAttr(settings, s_queue_threshold);
        PyObject *ep = PyLong_FromLong(epoch);
        if (th == NULL || ep == NULL) {
            Py_XDECREF(th);
            Py_XDECREF(ep);
            goto fail;
        }
        set_slot(q, Q_limit, th);
        set_slot(q, Q_epoch, ep);
        Py_DECREF(th);
        Py_DECREF(ep);
    }
    long pend = PyLong_AsLong(SLOT(q, Q_pending)), lim = PyLong_AsLong(SLOT(q, Q_limit));
    if ((pend == -1 || lim == -1) && PyErr_Occurred())
        goto fail;
    if (pend >= lim)
        goto python;
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

/* Whether the C path may record now: no piecewise array alive, no debugger hook. */
static inline int plain_now(void) {
    if (PyDict_GET_SIZE(piecewise) != 0)
        return 0;
    PyObject *h = PyDict_GetItemWithError(hooks_dict, s_on_record);
    return h == NULL || h == Py_None;
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
    PyObject *p = SLOT(self, A_port);
    PyTypeObject *t = Py_TYPE(other);
    PyObject *shape = SLOT(p, P_shape);
    PyObject *q = NULL, *key, *kb;
    int is_int = 0;
    if (t == ArrayType) {
        q = SLOT(other, A_port);
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
    if (q == NULL) {
        if (is_int) {
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

static PyObject *binop_call2(BinOp *b, PyObject *self, PyObject *other) {
    if (!enabled || Py_TYPE(self) != ArrayType || !plain_now())
        return PyObject_CallFunctionObjArgs(b->func, self, other, NULL);
    PyObject *site = user_site();
    if (site == NULL) {
        if (PyErr_Occurred())
            return NULL;
        return PyObject_CallFunctionObjArgs(b->func, self, other, NULL);
    }
    PyObject *r = binop_fast(b, self, other, site);
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
    if (enabled && Py_TYPE(args[0]) == ArrayType && Py_TYPE(args[2]) == SiteType &&
        plain_now())
        r = binop_fast(b, args[0], args[1], args[2]);
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
    if (n != 1 || kwnames != NULL || !enabled || Py_TYPE(args[0]) != ArrayType ||
        !plain_now())
        return PyObject_Vectorcall(m->func, args, nargsf, kwnames);
    PyObject *p = SLOT(args[0], A_port);
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

/* ---- Array.__del__ ----------------------------------------------------------------------- */
/* array._decref: one Array fewer refers to the port; at zero a view lets go of its base. */
static void decref_port(PyObject *p) {
    while (p != NULL) {
        if (add_nrefs(p, -1) < 0) {
            PyErr_Clear();
            return;
        }
        PyObject *n = SLOT(p, P_nrefs);
        if (PyLong_AsLong(n) > 0 || !streq(SLOT(p, P_kind), s_view))
            return;
        PyObject *ins = SLOT(p, P_inputs);
        if (ins == NULL || !PyTuple_Check(ins) || PyTuple_GET_SIZE(ins) < 1)
            return;
        p = PyTuple_GET_ITEM(ins, 0);
    }
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
} ArrayDel;

static PyObject *arraydel_vectorcall(PyObject *Py_UNUSED(o), PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL && configured &&
        PyObject_TypeCheck(args[0], ArrayType)) {
        PyObject *port = SLOT(args[0], A_port);
        if (port != NULL && Py_TYPE(port) == PortType)
            decref_port(port);
    }
    Py_RETURN_NONE;
}

/* Array's tp_finalize, set directly (frontend/native.py installs it): the same as calling
 * its __del__, without looking the method up and calling it for every Array that dies. */
static void array_finalize(PyObject *self) {
    if (configured && PyObject_TypeCheck(self, ArrayType)) {
        PyObject *port = SLOT(self, A_port);
        if (port != NULL && Py_TYPE(port) == PortType)
            decref_port(port);
    }
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
        get_obj(cfg, "DEAD", &st_dead))
        return NULL;
    if (!PyDict_Check(internal) || !PyDict_Check(fast_memo) || !PyDict_Check(ufast_memo) ||
        !PyDict_Check(piecewise) || !PyDict_Check(hooks_dict) || !PyDict_Check(iinfo) ||
        !PyDict_Check(follow_table) ||
        !PyIter_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "configure: unexpected object types");
        return NULL;
    }
    struct { PyTypeObject **tp; const char *name; Py_ssize_t *off; } slots[] = {
        {&ArrayType, "_port", &A_port},
        {&PortType, "id", &P_id}, {&PortType, "kind", &P_kind}, {&PortType, "op", &P_op},
        {&PortType, "dtype", &P_dtype}, {&PortType, "shape", &P_shape},
        {&PortType, "inputs", &P_inputs}, {&PortType, "params", &P_params},
        {&PortType, "site", &P_site}, {&PortType, "queue", &P_queue},
        {&PortType, "value", &P_value}, {&PortType, "state", &P_state},
        {&PortType, "error", &P_error}, {&PortType, "nrefs", &P_nrefs},
        {&PortType, "scalar", &P_scalar}, {&PortType, "loop_dtype", &P_loop_dtype},
        {&PortType, "ref", &P_ref}, {&PortType, "holders", &P_holders},
        {&SiteType, "code", &S_code}, {&SiteType, "lasti", &S_lasti},
        {&SiteType, "_lineno", &S_lineno},
        {&QueueType, "entries", &Q_entries}, {&QueueType, "lock", &Q_lock},
        {&QueueType, "pending_computes", &Q_pending}, {&QueueType, "keyparts", &Q_keyparts},
        {&QueueType, "kports", &Q_kports}, {&QueueType, "num", &Q_num},
        {&QueueType, "recorded", &Q_recorded}, {&QueueType, "max_elements", &Q_max_elements},
        {&QueueType, "_shape", &Q_shape}, {&QueueType, "limit", &Q_limit},
        {&QueueType, "epoch", &Q_epoch}, {&QueueType, "follow", &Q_follow},
        {&QueueType, "fpos", &Q_fpos},
    };
    for (size_t k = 0; k < sizeof(slots) / sizeof(slots[0]); k++)
        if (slot_offset(*slots[k].tp, slots[k].name, slots[k].off) < 0)
            return NULL;
#define INTERN(var, s) if ((var = PyUnicode_InternFromString(s)) == NULL) return NULL
    INTERN(s_map, "map"); INTERN(s_scalar, "scalar"); INTERN(s_view, "view");
    INTERN(s_const, "const"); INTERN(s_compute, "compute"); INTERN(s_f, "f");
    INTERN(s_i, "i"); INTERN(s_S, "S"); INTERN(s_power, "power");
    INTERN(s_on_record, "on_record"); INTERN(s_queue_threshold, "queue_threshold");
    INTERN(s_queue_key, "streamrt.work_queue");
#undef INTERN
    if ((zero = PyLong_FromLong(0)) == NULL ||
        (empty = PyTuple_New(0)) == NULL)
        return NULL;
    configured = enabled = 1;
    Py_RETURN_NONE;
}

static PyObject *install_finalizer(PyObject *Py_UNUSED(mod), PyObject *Py_UNUSED(unused)) {
    if (!configured || ArrayType->tp_finalize == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "install_finalizer: not configured, or Array has "
                        "no __del__");
        return NULL;
    }
    ArrayType->tp_finalize = array_finalize;
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
    if (!enabled || Py_TYPE(port) != PortType || !plain_now())
        return call_enqueue(port);
    return enqueue(port);
}

static PyObject *settings_changed(PyObject *Py_UNUSED(mod), PyObject *Py_UNUSED(unused)) {
    epoch++;
    Py_RETURN_NONE;
}

/* The interface version frontend/native.py expects: a build older than its source (an
 * editable install not rebuilt after a pull) is then not used. */
#define NATIVE_ABI 3

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

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, "Give the C record path the classes, memo dicts and "
     "functions of the Python one (frontend/native.py); once."},
    {"enable", enable, METH_O, "Switch the C path on or off (off: every call takes the Python "
     "path); returns the previous state."},
    {"install_finalizer", install_finalizer, METH_NOARGS, "Array's tp_finalize: the C "
     "__del__ (after Array.__del__ is the ArrayDel)."},
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
    if (PyType_Ready(&BinOpType) < 0 || PyType_Ready(&MapFuncType) < 0 ||
        PyType_Ready(&ArrayDelType) < 0 || PyType_Ready(&QueueLockType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "ABI", NATIVE_ABI) < 0 ||
        PyModule_AddObjectRef(m, "BinOp", (PyObject *)&BinOpType) < 0 ||
        PyModule_AddObjectRef(m, "MapFunc", (PyObject *)&MapFuncType) < 0 ||
        PyModule_AddObjectRef(m, "ArrayDel", (PyObject *)&ArrayDelType) < 0 ||
        PyModule_AddObjectRef(m, "QueueLock", (PyObject *)&QueueLockType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
