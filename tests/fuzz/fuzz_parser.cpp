// libFuzzer target riseml-fuzz-parser: any bytes as a riseml.yml (built-in site defaults) and as
// a site file; a site file that loads is then used to translate a few fixed jobs, so the
// sbatch writer meets odd site values too. Beyond the sanitizers, it checks the translator's
// contract: a script exactly when there are no errors, and every error printable.
// Built by tests/fuzz/CMakeLists.txt; run with tests/fuzz/run.sh. Without RISEML_FUZZ the same
// entry point replays the seed corpus as a test (replay_main.cpp).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "site_config.hpp"
#include "translation.hpp"

namespace {

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "riseml-fuzz-parser: contract broken: %s\n", what);
  std::abort();
}

void check_translation(const riseml::Translation& t) {
  check(t.script.has_value() != t.diagnostics.has_errors(), "a script iff no errors");
  check(!t.script || t.job.has_value(), "a script has its job");
  const std::string text = t.diagnostics.format();
  check(!t.diagnostics.has_errors() || text.find(": error: ") != std::string::npos,
        "errors are printed");
  if (t.script) {
    check(t.script->rfind("#!/bin/bash", 0) == 0, "the script starts with #!/bin/bash");
    check(t.script->find('\0') == std::string::npos, "no NUL in the script");
  }
}

// Jobs that reach every part of the writer: image or framework, sweep, horovod, distributed.
const char* const kJobs[] = {
    "project: p\ntrain:\n  framework: tensorflow\n  tensorflow: {version: 1.5.0}\n"
    "  resources: {gpus: 1, cpus: 2, mem: 512}\n  install: pip install x\n"
    "  parameters: {lr: [0.1, 0.2]}\n  run: python t.py {{lr}}\n",
    "project: p\ntrain:\n  image: gcr.io/x/y:1\n  horovod: {workers: 2}\n"
    "  resources: {gpus: 2, cpus: 4}\n  run: [a, b]\nslurm: {partition: gpu}\n",
    "project: p\ntrain:\n  framework: tensorflow\n  tensorflow:\n"
    "    distributed: {ps: 1, worker: 2}\n  resources: {cpus: 1}\n  run: x\n",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  check_translation(riseml::translate_text(text, "fuzz.yml", riseml::SiteConfig{}));

  riseml::Diagnostics diags;
  auto site = riseml::parse_site_config_text(text, "site.yml", diags);
  check(site.has_value() != diags.has_errors(), "a site iff no errors");
  if (site) {
    for (const char* job : kJobs) check_translation(riseml::translate_text(job, "job.yml", *site));
  }
  return 0;
}
