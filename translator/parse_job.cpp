// The top level of a riseml.yml: project, train, deploy, slurm, and the shapes of older files.
#include <regex>

#include "job_parser.hpp"
#include "section_parsers.hpp"
#include "yaml_document.hpp"

namespace riseml {

namespace {

const std::vector<std::string> kTopLevelKeys = {"project", "train", "deploy", "slurm"};
// Keys that belong inside `train:`; found at the top they mean a missing `train:` line.
const std::vector<std::string> kTrainKeys = {
    "image", "install", "run", "resources", "framework", "tensorflow", "parameters",
    "concurrency", "params", "concurrent-experiments", "inputs"};

bool valid_project_name(const std::string& name) {
  static const std::regex re("[A-Za-z0-9]([A-Za-z0-9_-]{0,62}[A-Za-z0-9])?");
  return name.size() <= 64 && std::regex_match(name, re);  // (regex recursion: bound first)
}

void parse_project(YamlReader& r, const YAML::Node& node, const std::string& key, JobFile& job) {
  auto name = r.string(node, key);
  if (!name) return;
  if (!valid_project_name(*name)) {
    r.error(node, key,
            "'" + *name + "' is not a valid project name: use letters, digits, '-' and '_', "
            "starting and ending with a letter or digit, at most 64 characters "
            "(e.g. project: my-project)");
    return;
  }
  job.project = *name;
}

// Files from before RiseML's `train:` section, and files that are not riseml.yml at all.
bool reject_foreign_shapes(YamlReader& r, const YAML::Node& root) {
  if (root["service"]) {
    r.error(root["service"], "service",
            "this is a RiseML 2016 'service' file (a model demo), which Slurm cannot serve; "
            "write a train job instead: train: {image: ..., run: ...}");
    return true;
  }
  if (root["revision"] && root["run"] && root["run"].IsMap()) {
    r.error(root["revision"], "revision",
            "this is the riseml-configuration.yml that RiseML wrote into an experiment's "
            "output, not a riseml.yml; use the riseml.yml it came from");
    return true;
  }
  bool stray = false;
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) continue;
    const std::string& key = kv.first.Scalar();
    if (std::find(kTrainKeys.begin(), kTrainKeys.end(), key) != kTrainKeys.end()) {
      r.error(kv.first, key,
              "'" + key + "' belongs inside the train section: add a line 'train:' above it "
              "and indent the train keys under it");
      stray = true;
    }
  }
  return stray;
}

}  // namespace

namespace {

std::optional<JobFile> parse_root(const YAML::Node& document, const std::string& file,
                                  const std::string& text, Diagnostics& diags) {
  const YAML::Node* root = &document;  // read through a const node: operator[] adds no keys
  YamlReader r(file, diags, &text);
  if (!root->IsDefined() || root->IsNull()) {
    diags.error({file, 0, 0}, "",
                "the file is empty; a riseml.yml needs at least: project: NAME, and "
                "train: {run: COMMAND}");
    return std::nullopt;
  }
  if (!root->IsMap()) {
    r.error(*root, "",
            "the file must be a mapping of keys (project:, train:), got " + YamlReader::describe(*root));
    return std::nullopt;
  }

  JobFile job;
  job.path = file;
  const bool foreign = reject_foreign_shapes(r, *root);
  for (const auto& kv : *root) {
    if (!kv.first.IsScalar()) continue;
    const std::string& key = kv.first.Scalar();
    if (key == "repository") {
      r.warning(kv.first, key, "'repository' is the old name of 'project': write project: " +
                                   (kv.second.IsScalar() ? kv.second.Scalar() : "NAME"));
      if ((*root)["project"]) {
        r.error(kv.first, key, "give either 'project' or the old 'repository', not both");
      } else {
        parse_project(r, kv.second, key, job);
      }
    } else if (key == "description") {
      r.warning(kv.first, key, "ignored: Slurm jobs have no description (use a comment)");
    }
  }
  if (foreign) return std::nullopt;

  std::vector<std::string> known = kTopLevelKeys;
  known.insert(known.end(), {"repository", "description"});
  r.check_keys(*root, "", known);

  if (auto p = (*root)["project"]) parse_project(r, p, "project", job);
  if (job.project.empty() && !(*root)["project"] && !(*root)["repository"]) {
    diags.error({file, 1, 1}, "project", "missing: add a first line 'project: NAME' "
                                         "(it names the Slurm job and the output folder)");
  }

  const YAML::Node train = (*root)["train"];
  const YAML::Node deploy = (*root)["deploy"];
  if (deploy) {
    if (train) {
      r.warning(deploy, "deploy",
                "not supported on Slurm (it serves models; Slurm runs batch jobs): ignored");
    } else {
      r.error(deploy, "deploy",
              "not supported on Slurm: 'deploy' served a model, and Slurm runs batch jobs; "
              "to train, rename 'deploy:' to 'train:'");
    }
  }
  if (train) {
    parse_train_section(r, train, job.train);
  } else if (!deploy) {
    diags.error({file, 1, 1}, "train",
                "missing: add a train section, e.g. train: {run: python train.py}");
  }
  if (auto slurm = (*root)["slurm"]) parse_slurm_section(r, slurm, job.slurm);

  if (diags.has_errors()) return std::nullopt;
  return job;
}

}  // namespace

std::optional<JobFile> parse_job_text(const std::string& text, const std::string& file,
                                      Diagnostics& diags) {
  auto root = load_yaml(text, file, diags);
  if (!root) return std::nullopt;
  return parse_root(*root, file, text, diags);
}

std::optional<JobFile> parse_job_file(const std::string& path, Diagnostics& diags) {
  auto text = read_yaml_text(path, diags);
  if (!text) return std::nullopt;
  auto root = load_yaml(*text, path, diags);
  if (!root) return std::nullopt;
  return parse_root(*root, path, *text, diags);
}

}  // namespace riseml
