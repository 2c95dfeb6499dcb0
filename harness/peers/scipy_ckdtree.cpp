/* scipy_ckdtree.cpp - scipy's cKDTree, the search a Python user reaches
 * for, run inside nsearch-bench through an embedded Python interpreter, so
 * it is validated, timed and recorded exactly like the other peers (no
 * driver process, no second copy of the timing or the statistics).
 *
 * Build: numpy.frombuffer over the caller's positions (no copy), then
 * cKDTree(points) with scipy's defaults (leafsize 16, balanced, compact;
 * cKDTree converts the float32 points to float64 itself, inside the timed
 * build). Query: tree.query_pairs(2 r_max, output_type="ndarray") - scipy
 * has no per-particle reach for pairs, so every pair within twice the
 * largest radius (inflated) is a candidate - then each candidate is decided
 * by the predicate. query_pairs is serial; so is this peer. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "contacts.hpp"

namespace
{

const char *const driver = "import numpy, scipy.spatial\n"
                           "def build(view, n):\n"
                           "    points = numpy.frombuffer(view, dtype=numpy.float32, count=3 * n)\n"
                           "    return scipy.spatial.cKDTree(points.reshape(n, 3))\n"
                           "def query(tree, reach):\n"
                           "    return tree.query_pairs(reach, output_type='ndarray')\n";

PyObject *build_fn = nullptr, *query_fn = nullptr;

/* The Python error as an ns_status (the exception cleared). */
ns_status python_failure(ns_error *err, const char *doing)
{
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyObject *text = value ? PyObject_Str(value) : nullptr;
    const char *what = text ? PyUnicode_AsUTF8(text) : nullptr;
    char msg[240];
    std::snprintf(msg, sizeof msg, "scipy_ckdtree: %s: %s", doing, what ? what : "Python error");
    bool memory = type && PyErr_GivenExceptionMatches(type, PyExc_MemoryError);
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(trace);
    PyErr_Clear();
    return nsb::fail(err, memory ? NS_ERR_OUT_OF_MEMORY : NS_ERR_INVALID_ARGUMENT, msg);
}

/* The interpreter and the driver's functions, made once per process. */
ns_status start_python(ns_error *err)
{
    if (build_fn)
        return NS_OK;
    if (!Py_IsInitialized())
        Py_InitializeEx(0); /* 0: Python installs no signal handlers */
    PyObject *globals = PyDict_New();
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    PyObject *done = PyRun_String(driver, Py_file_input, globals, globals);
    if (!done) {
        Py_DECREF(globals);
        return python_failure(err, "importing numpy and scipy");
    }
    Py_DECREF(done);
    build_fn = PyDict_GetItemString(globals, "build");
    query_fn = PyDict_GetItemString(globals, "query");
    Py_XINCREF(build_fn);
    Py_XINCREF(query_fn);
    Py_DECREF(globals);
    return NS_OK;
}

struct state {
    PyObject *tree = nullptr;
    float largest = 0.0f;
    nsb::parts out;
    ~state()
    {
        Py_XDECREF(tree);
    }
};

ns_status build(void *s_, const ns_particles *p, int threads, ns_error *err)
{
    (void)threads;
    state *s = static_cast<state *>(s_);
    ns_status st = start_python(err);
    if (st != NS_OK)
        return st;
    Py_CLEAR(s->tree);
    s->largest = nsb::largest_radius(p);
    static float none[3];
    PyObject *view = PyMemoryView_FromMemory(p->n ? (char *)p->pos : (char *)none,
                                             (Py_ssize_t)(3 * p->n * sizeof(float)), PyBUF_READ);
    if (!view)
        return python_failure(err, "a view of the positions");
    s->tree = PyObject_CallFunction(build_fn, "On", view, (Py_ssize_t)p->n);
    Py_DECREF(view);
    return s->tree ? NS_OK : python_failure(err, "cKDTree");
}

ns_status query(void *s_, const ns_particles *p, int threads, ns_contact_list *out,
                size_t *candidates, ns_error *err)
{
    (void)threads;
    state *s = static_cast<state *>(s_);
    double reach = 2.0 * (double)s->largest * nsb::inflate;
    PyObject *pairs = PyObject_CallFunction(query_fn, "Od", s->tree, reach);
    if (!pairs)
        return python_failure(err, "query_pairs");
    Py_buffer b;
    if (PyObject_GetBuffer(pairs, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        Py_DECREF(pairs);
        return python_failure(err, "the pairs' buffer");
    }
    if (b.itemsize != (Py_ssize_t)sizeof(int64_t)) {
        PyBuffer_Release(&b);
        Py_DECREF(pairs);
        return nsb::fail(err, NS_ERR_INVALID_ARGUMENT, "scipy_ckdtree: pairs are not 64-bit");
    }
    ns_status st = nsb::guarded("scipy_ckdtree", err, [&] {
        const int64_t *ij = static_cast<const int64_t *>(b.buf);
        size_t count = (size_t)b.len / (2 * sizeof(int64_t)), tested = 0;
        s->out.start(1);
        for (size_t k = 0; k < count; k++)
            s->out.test(p, s->out.of_thread[0], tested, (uint32_t)ij[2 * k],
                        (uint32_t)ij[2 * k + 1]);
        *candidates = tested;
        return s->out.gather(out, err);
    });
    PyBuffer_Release(&b);
    Py_DECREF(pairs);
    return st;
}

double bytes(const void *s_)
{
    (void)s_;
    return -1.0; /* cKDTree does not report its memory */
}

} // namespace

extern "C" const nsb_peer nsb_peer_scipy_ckdtree = {
    "scipy_ckdtree",
    "scipy cKDTree (embedded Python), query_pairs within twice the largest radius, serial",
    "scipy " NSB_SCIPY_VERSION " (Python " PY_VERSION ")",
    "cKDTree defaults (leafsize 16, balanced_tree, compact_nodes); query_pairs output_type "
    "ndarray; one reach 2 r_max for every pair (cKDTree has no per-particle reach for pairs)",
    false,
    false,
    nsb::create<state>,
    nullptr,
    build,
    query,
    bytes,
    nsb::destroy<state>,
};
