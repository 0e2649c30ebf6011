// A pybind11 holder for torch's intrusive_ptr-counted objects that drops its reference with the
// GIL released. The backend's destructor joins its worker thread, and that thread may be freeing
// a tensor whose Python object needs the GIL: a Python thread holding the GIL while it waits in
// the join would deadlock (destroy_process_group hung on 1 rank in 3 that way). torch registers
// its own Backend and Work types with a holder of this kind; a type of ours derived from them
// must do the same.
//
// It holds nothing but the intrusive_ptr: pybind11 hands a returned c10::intrusive_ptr<Base> to
// the most derived registered type's holder, which must be laid out alike (as torch's is).
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <Python.h>
#include <pybind11/pybind11.h>

#include <utility>

namespace riseml::python {

template <class T>
class GilFreeRelease {
 public:
  GilFreeRelease() = default;
  GilFreeRelease(const GilFreeRelease&) = default;
  GilFreeRelease(GilFreeRelease&&) noexcept = default;
  GilFreeRelease& operator=(const GilFreeRelease&) = default;
  GilFreeRelease& operator=(GilFreeRelease&&) noexcept = default;
  GilFreeRelease(c10::intrusive_ptr<T> p) : ptr_(std::move(p)) {}  // NOLINT: implicit, as a holder
  // pybind11 makes a holder from the raw pointer of a new instance: take the reference it owns.
  explicit GilFreeRelease(T* raw) : ptr_(c10::intrusive_ptr<T>::unsafe_steal_from_new(raw)) {}
  ~GilFreeRelease() { release(); }

  T* get() const noexcept { return ptr_.get(); }
  T& operator*() const noexcept { return *ptr_; }
  T* operator->() const noexcept { return ptr_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(ptr_); }

 private:
  void release() noexcept {
    if (!ptr_) return;
    if (Py_IsInitialized() && PyGILState_Check()) {
      pybind11::gil_scoped_release unlocked;
      ptr_.reset();
    } else {
      ptr_.reset();
    }
  }

  c10::intrusive_ptr<T> ptr_;
};

}  // namespace riseml::python

PYBIND11_DECLARE_HOLDER_TYPE(T, riseml::python::GilFreeRelease<T>, true)
