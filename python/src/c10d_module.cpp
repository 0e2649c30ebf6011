// _riseml_c10d: the Python face of the torch.distributed backend (torch_distributed/). It only
// converts: riseml.torch.distributed registers create_process_group with torch and uses
// PmixWorld to find rank 0's store without MASTER_ADDR. The environment is read here, once per
// process group, and nowhere below.
#include <riseml/torch_distributed/pmix_world.hpp>
#include <riseml/torch_distributed/process_group_riseml.hpp>

#include "gil_free_release.hpp"

#include <torch/csrc/utils/pybind.h>

#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <string>

namespace py = pybind11;
using riseml::torch_distributed::PmixWorld;
using riseml::torch_distributed::ProcessGroupOptions;
using riseml::torch_distributed::ProcessGroupRiseml;

PYBIND11_MODULE(_riseml_c10d, m) {
  m.doc() = "riseml's torch.distributed backend (use riseml.torch.distributed)";
  py::module_::import("torch.distributed");
  // Whether the backend takes CUDA tensors (through NCCL on its own stream): a build for a CUDA
  // torch with riseml's GPU support.
  m.attr("cuda_tensors") = riseml::torch_distributed::cuda_tensors_supported();

  m.def(
      "wait_until_idle",
      [](double seconds) {
        return riseml::torch_distributed::wait_until_collectives_idle(
            std::chrono::milliseconds(static_cast<long long>(seconds * 1000)));
      },
      py::arg("seconds"), py::call_guard<py::gil_scoped_release>(),
      "Waits until no riseml group has a collective queued or running (at exit).");

  py::class_<PmixWorld>(m, "PmixWorld")
      .def(py::init<std::chrono::milliseconds>(), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("rank", [](const PmixWorld& w) { return w.facts().rank; })
      .def_property_readonly("size", [](const PmixWorld& w) { return w.facts().size; })
      .def_property_readonly("local_rank", [](const PmixWorld& w) { return w.facts().local_rank; })
      .def_property_readonly("local_size", [](const PmixWorld& w) { return w.facts().local_size; })
      .def_property_readonly("node_id", [](const PmixWorld& w) { return w.facts().node_id; })
      .def_property_readonly("num_nodes", [](const PmixWorld& w) { return w.facts().num_nodes; })
      .def_property_readonly("hostname", [](const PmixWorld& w) { return w.facts().hostname; })
      .def_static("root_address", &PmixWorld::root_address, py::arg("iface"))
      .def("share_root", &PmixWorld::share_root, py::arg("endpoint"),
           py::call_guard<py::gil_scoped_release>())
      .def("close", &PmixWorld::close, py::call_guard<py::gil_scoped_release>());

#if RISEML_TORCH_MAJOR >= 2
  // The backend's own Python type (what create_process_group's groups are), for what torch asks
  // of it beyond c10d::Backend: with a bound device_id (eager init), new_group asks the parent's
  // backend of every rank outside the new group for a no-colour split (NCCL's ncclCommSplit
  // needs all of the parent's ranks). riseml's subgroups are set up by their members alone,
  // through the store, so there is nothing to do, but without the method those ranks would fail.
  // Its holder drops the last reference without the GIL (gil_free_release.hpp).
  py::class_<ProcessGroupRiseml, riseml::torch_distributed::BackendBase,
             riseml::python::GilFreeRelease<ProcessGroupRiseml>>(m, "ProcessGroupRiseml")
      .def("perform_nocolor_split", [](ProcessGroupRiseml&, const c10::Device&) {},
           py::arg("device"));
#endif

  m.def(
      "create_process_group",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
         std::chrono::milliseconds timeout,
         const PmixWorld* world) -> c10::intrusive_ptr<riseml::torch_distributed::BackendBase> {
        ProcessGroupOptions options;
        options.communicator = riseml::CommunicatorOptions::from_environment();
        if (world != nullptr) options.job_secret = world->job_secret();
        // Tests only: CPU tensors down the device path, on its host stand-in.
        const char* standin = std::getenv("RISEML_TORCH_DEVICE_STANDIN");
        options.device_standin = standin != nullptr && std::string(standin) == "1";
        return c10::make_intrusive<ProcessGroupRiseml>(store, rank, size, timeout, options);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
      py::arg("pmix_world") = nullptr, py::call_guard<py::gil_scoped_release>());
}
