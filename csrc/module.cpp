// pybind11 bindings for ember.kernels._native.
//
// Every entry point checks dtypes, shapes and memory layout, allocates its
// outputs while holding the GIL, then releases the GIL for the kernel itself.
// ember/kernels/native_ops.py is the intended caller: it converts layouts and
// gives friendlier errors; the checks here keep direct callers from ever
// reaching the unchecked loops with bad input.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "dispatch.hpp"

namespace py = pybind11;
using ember_native::active_kernels;

namespace {

enum class Dtype { f32, f64 };

std::string shape_str(const py::array& a) {
    std::string out = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) {
        out += std::to_string(a.shape(i));
        if (a.ndim() == 1 || i + 1 < a.ndim()) out += i + 1 < a.ndim() ? ", " : ",";
    }
    return out + ")";
}

std::string describe(const py::array& a) {
    return std::string(py::str(a.dtype())) + " array of shape " + shape_str(a);
}

// dtype of a float array, or TypeError naming the op and the argument.
Dtype float_dtype(const char* op, const char* name, const py::array& a) {
    if (py::isinstance<py::array_t<float>>(a)) return Dtype::f32;
    if (py::isinstance<py::array_t<double>>(a)) return Dtype::f64;
    throw py::type_error(std::string(op) + ": " + name +
                         " must be a native-byte-order float32 or float64 array, got " +
                         describe(a));
}

void require_same_dtype(const char* op, const char* name, const py::array& a, Dtype want,
                        const char* ref_name, const py::array& ref) {
    if (float_dtype(op, name, a) != want) {
        throw py::type_error(std::string(op) + ": " + name + " must have the dtype of " +
                             ref_name + " (" + describe(ref) + "), got " + describe(a));
    }
}

// The kernels index raw pointers: insist on C order and natural alignment.
void require_layout(const char* op, const char* name, const py::array& a) {
    const bool contiguous = (a.flags() & py::array::c_style) != 0;
    const bool aligned = reinterpret_cast<std::uintptr_t>(a.data()) % a.itemsize() == 0;
    if (!contiguous || !aligned) {
        throw py::value_error(std::string(op) + ": " + name +
                              " must be C-contiguous and aligned, got a " +
                              (contiguous ? "misaligned " : "non-contiguous ") + describe(a) +
                              " (native_ops makes a contiguous copy automatically)");
    }
}

void require_shape(const char* op, const char* name, const py::array& a,
                   const std::vector<py::ssize_t>& want, const std::string& why) {
    bool same = a.ndim() == static_cast<py::ssize_t>(want.size());
    for (size_t i = 0; same && i < want.size(); ++i) same = a.shape(i) == want[i];
    if (!same) {
        std::string w = "(";
        for (size_t i = 0; i < want.size(); ++i) {
            w += std::to_string(want[i]);
            if (want.size() == 1 || i + 1 < want.size()) w += i + 1 < want.size() ? ", " : ",";
        }
        w += ")";
        throw py::value_error(std::string(op) + ": " + name + " must have shape " + w + " (" +
                              why + "), got " + describe(a));
    }
}

std::vector<py::ssize_t> shape_of(const py::array& a) {
    return std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim());
}

int check_threads(const char* op, int threads) {
    if (threads < 0) {
        throw py::value_error(std::string(op) + ": threads must be >= 0 (0 = all), got " +
                              std::to_string(threads));
    }
    return threads;
}

// New C-order output array.
py::array new_array(Dtype dt, const std::vector<py::ssize_t>& shape) {
    if (dt == Dtype::f32) return py::array_t<float>(shape);
    return py::array_t<double>(shape);
}

// Kernel arguments are raw pointers taken while the GIL is held (py::array
// accessors and casts may touch reference counts); inside the GIL-released
// region only these plain pointers are used.
const void* in_ptr(const py::array& a) { return a.data(); }
void* out_ptr(py::array& a) { return a.mutable_data(); }

// Data pointer of an optional (already validated) array argument, or nullptr.
const void* in_ptr_or_null(const py::object& maybe) {
    return maybe.is_none() ? nullptr : maybe.cast<py::array>().data();
}

template <typename T>
const T* as(const void* p) {
    return static_cast<const T*>(p);
}

template <typename T>
T* as_out(void* p) {
    return static_cast<T*>(p);
}

// --------------------------------------------------------------------------- GELU

py::array gelu(const py::array& x, bool approximate, int threads) {
    const char* op = "gelu";
    const Dtype dt = float_dtype(op, "x", x);
    require_layout(op, "x", x);
    threads = check_threads(op, threads);
    py::array y = new_array(dt, shape_of(x));
    const int64_t n = static_cast<int64_t>(x.size());
    const void* px = in_ptr(x);
    void* py_ = out_ptr(y);
    {
        py::gil_scoped_release release;
        if (dt == Dtype::f32) {
            active_kernels().f32.gelu(as<float>(px), as_out<float>(py_), n, approximate, threads);
        } else {
            active_kernels().f64.gelu(as<double>(px), as_out<double>(py_), n, approximate,
                                      threads);
        }
    }
    return y;
}

py::array gelu_backward(const py::array& x, const py::array& dy, bool approximate, int threads) {
    const char* op = "gelu_backward";
    const Dtype dt = float_dtype(op, "x", x);
    require_same_dtype(op, "dy", dy, dt, "x", x);
    require_layout(op, "x", x);
    require_layout(op, "dy", dy);
    require_shape(op, "dy", dy, shape_of(x), "the shape of x");
    threads = check_threads(op, threads);
    py::array dx = new_array(dt, shape_of(x));
    const int64_t n = static_cast<int64_t>(x.size());
    const void* px = in_ptr(x);
    const void* pdy = in_ptr(dy);
    void* pdx = out_ptr(dx);
    {
        py::gil_scoped_release release;
        if (dt == Dtype::f32) {
            active_kernels().f32.gelu_backward(as<float>(px), as<float>(pdy), as_out<float>(pdx),
                                               n, approximate, threads);
        } else {
            active_kernels().f64.gelu_backward(as<double>(px), as<double>(pdy),
                                               as_out<double>(pdx), n, approximate, threads);
        }
    }
    return dx;
}

// --------------------------------------------------------------------- layer norm

// rows x dim view of an array normalised over its last axis.
struct RowShape {
    std::vector<py::ssize_t> full;  // x.shape
    std::vector<py::ssize_t> lead;  // x.shape[:-1]
    int64_t rows;
    int64_t dim;
};

RowShape row_shape(const char* op, const py::array& x) {
    if (x.ndim() < 1) {
        throw py::value_error(std::string(op) + ": x must have at least one axis, got " +
                              describe(x));
    }
    RowShape rs;
    rs.full = shape_of(x);
    rs.lead.assign(rs.full.begin(), rs.full.end() - 1);
    rs.dim = static_cast<int64_t>(rs.full.back());
    if (rs.dim == 0) {
        throw py::value_error(std::string(op) + ": the normalised (last) axis of x is empty: " +
                              describe(x));
    }
    rs.rows = static_cast<int64_t>(x.size()) / rs.dim;
    return rs;
}

void check_param(const char* op, const char* name, const py::object& p, Dtype dt,
                 const py::array& x, int64_t dim) {
    if (p.is_none()) return;
    if (!py::isinstance<py::array>(p)) {
        throw py::type_error(std::string(op) + ": " + name +
                             " must be a NumPy array or None, got " +
                             std::string(py::str(py::type::of(p).attr("__name__"))));
    }
    const py::array a = p.cast<py::array>();
    require_same_dtype(op, name, a, dt, "x", x);
    require_layout(op, name, a);
    require_shape(op, name, a, {static_cast<py::ssize_t>(dim)}, "the last axis of x");
}

py::tuple layer_norm(const py::array& x, const py::object& gamma, const py::object& beta,
                     double eps, int threads) {
    const char* op = "layer_norm";
    const Dtype dt = float_dtype(op, "x", x);
    require_layout(op, "x", x);
    const RowShape rs = row_shape(op, x);
    check_param(op, "gamma", gamma, dt, x, rs.dim);
    check_param(op, "beta", beta, dt, x, rs.dim);
    if (!(eps >= 0.0) || std::isinf(eps)) {
        throw py::value_error(std::string(op) + ": eps must be finite and >= 0, got " +
                              std::to_string(eps));
    }
    threads = check_threads(op, threads);
    py::array y = new_array(dt, rs.full);
    py::array mean = new_array(dt, rs.lead);
    py::array rstd = new_array(dt, rs.lead);
    const void* px = in_ptr(x);
    const void* pg = in_ptr_or_null(gamma);
    const void* pb = in_ptr_or_null(beta);
    void* py_ = out_ptr(y);
    void* pm = out_ptr(mean);
    void* pr = out_ptr(rstd);
    {
        py::gil_scoped_release release;
        if (dt == Dtype::f32) {
            active_kernels().f32.layer_norm(as<float>(px), as<float>(pg), as<float>(pb),
                                            as_out<float>(py_), as_out<float>(pm),
                                            as_out<float>(pr), rs.rows, rs.dim, eps, threads);
        } else {
            active_kernels().f64.layer_norm(as<double>(px), as<double>(pg), as<double>(pb),
                                            as_out<double>(py_), as_out<double>(pm),
                                            as_out<double>(pr), rs.rows, rs.dim, eps, threads);
        }
    }
    return py::make_tuple(y, mean, rstd);
}

py::tuple layer_norm_backward(const py::array& dy, const py::array& x, const py::array& mean,
                              const py::array& rstd, const py::object& gamma, int threads) {
    const char* op = "layer_norm_backward";
    const Dtype dt = float_dtype(op, "x", x);
    require_same_dtype(op, "dy", dy, dt, "x", x);
    require_same_dtype(op, "mean", mean, dt, "x", x);
    require_same_dtype(op, "rstd", rstd, dt, "x", x);
    require_layout(op, "x", x);
    require_layout(op, "dy", dy);
    require_layout(op, "mean", mean);
    require_layout(op, "rstd", rstd);
    const RowShape rs = row_shape(op, x);
    require_shape(op, "dy", dy, rs.full, "the shape of x");
    require_shape(op, "mean", mean, rs.lead, "x.shape[:-1]");
    require_shape(op, "rstd", rstd, rs.lead, "x.shape[:-1]");
    check_param(op, "gamma", gamma, dt, x, rs.dim);
    threads = check_threads(op, threads);
    const bool has_gamma = !gamma.is_none();
    py::array dx = new_array(dt, rs.full);
    py::array dgamma = has_gamma ? new_array(dt, {rs.full.back()}) : py::array();
    py::array dbeta = has_gamma ? new_array(dt, {rs.full.back()}) : py::array();
    const void* pdy = in_ptr(dy);
    const void* px = in_ptr(x);
    const void* pm = in_ptr(mean);
    const void* pr = in_ptr(rstd);
    const void* pg = in_ptr_or_null(gamma);
    void* pdx = out_ptr(dx);
    void* pdg = has_gamma ? out_ptr(dgamma) : nullptr;
    void* pdb = has_gamma ? out_ptr(dbeta) : nullptr;
    {
        py::gil_scoped_release release;
        if (dt == Dtype::f32) {
            active_kernels().f32.layer_norm_backward(
                as<float>(pdy), as<float>(px), as<float>(pm), as<float>(pr), as<float>(pg),
                as_out<float>(pdx), as_out<float>(pdg), as_out<float>(pdb), rs.rows, rs.dim,
                threads);
        } else {
            active_kernels().f64.layer_norm_backward(
                as<double>(pdy), as<double>(px), as<double>(pm), as<double>(pr), as<double>(pg),
                as_out<double>(pdx), as_out<double>(pdg), as_out<double>(pdb), rs.rows, rs.dim,
                threads);
        }
    }
    if (!has_gamma) return py::make_tuple(dx, py::none(), py::none());
    return py::make_tuple(dx, dgamma, dbeta);
}

int max_threads() {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

}  // namespace

PYBIND11_MODULE(_native, m) {
    m.doc() = "ember's optional C++ kernels (GELU, layer norm); use ember.kernels.native_ops.";

#ifdef _OPENMP
    m.attr("openmp") = true;
#else
    m.attr("openmp") = false;
#endif

    m.def("gelu", &gelu, py::arg("x"), py::arg("approximate") = false, py::arg("threads") = 0,
          "GELU of a C-contiguous float32/float64 array (new array).");
    m.def("gelu_backward", &gelu_backward, py::arg("x"), py::arg("dy"),
          py::arg("approximate") = false, py::arg("threads") = 0,
          "dx = dy * gelu'(x) (new array).");
    m.def("layer_norm", &layer_norm, py::arg("x"), py::arg("gamma"), py::arg("beta"),
          py::arg("eps"), py::arg("threads") = 0,
          "Layer norm over the last axis -> (y, mean, rstd).");
    m.def("layer_norm_backward", &layer_norm_backward, py::arg("dy"), py::arg("x"),
          py::arg("mean"), py::arg("rstd"), py::arg("gamma"), py::arg("threads") = 0,
          "Layer-norm backward -> (dx, dgamma, dbeta); dgamma/dbeta are None without gamma.");
    m.def("max_threads", &max_threads, "Threads used when threads=0 (OpenMP's default).");
    m.def("isa", [] { return std::string(active_kernels().isa); },
          "Instruction set of the kernels in use.");
    m.def("supported_isas", &ember_native::supported_isas,
          "Instruction sets usable on this CPU, best last.");
    m.def("set_isa", &ember_native::select_isa, py::arg("name"),
          "Use the kernels compiled for `name` (ValueError if unavailable).");
}
