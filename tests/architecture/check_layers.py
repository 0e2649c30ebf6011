#!/usr/bin/python3
"""The layering the project promises (docs/architecture.md), checked from the files themselves.

1. CMake: no folder names a path inside another top-level folder (no compiling another folder's
   .cpp, no add_subdirectory of a sibling, no include directory into another folder), except
   tests/, which points its tests at what they test.
2. Includes: a source includes only its own folder's files and the public headers
   (<folder>/include/...) of the layers below it; arrows point down only (LAYERS below).
   tests/<layer> may include its own layer's private headers.
3. No include cycle between files, nor between the sub-folders of a folder (src/core and
   src/transport, say).

Usage: check_layers.py [REPOSITORY]   (exit 1 with one line per finding)
"""
import os
import re
import sys

# Each layer and the layers it may use (DESIGN.md's table; transitive uses are listed too).
LAYERS = {
    "common": set(),
    "allreduce": set(),
    "model": set(),
    "pmix_bootstrap": {"allreduce", "common"},  # implements the core's rendezvous interface
    "elastic": {"allreduce", "pmix_bootstrap", "common"},  # JobFacts of pmix_bootstrap
    "engine": {"allreduce"},
    "runtime": {"engine", "allreduce", "pmix_bootstrap", "elastic", "common"},
    "torch_distributed": {"allreduce", "pmix_bootstrap", "common"},
    "translator": {"common", "model"},
    "spank_plugin": {"common"},
    "python": {"runtime", "torch_distributed", "engine", "allreduce", "pmix_bootstrap", "elastic",
               "common"},
    "tools": {"common", "allreduce", "model", "pmix_bootstrap", "elastic", "engine", "runtime",
              "torch_distributed"},
}
# Not layers: they hold no library code and may point anywhere.
OTHERS = {"contrib", "tests", "docs", ".ci"}
SOURCE = re.compile(r"\.(c|cc|cpp|cu|h|hpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
CMAKE_PATH = re.compile(r"\$\{(?:CMAKE_SOURCE_DIR|PROJECT_SOURCE_DIR)\}/([A-Za-z0-9_.-]+)")


def files_under(root, top):
    for base, dirs, files in os.walk(os.path.join(root, top)):
        dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build")]
        for f in files:
            yield os.path.join(base, f)


def public_folders(root):
    """The folders each layer's targets make public (target_include_directories PUBLIC or
    INTERFACE of ${CMAKE_CURRENT_SOURCE_DIR}...), relative to the repository."""
    public = []
    for layer in LAYERS:
        for path in files_under(root, layer):
            if os.path.basename(path) != "CMakeLists.txt":
                continue
            here = os.path.relpath(os.path.dirname(path), root)
            text = open(path, encoding="utf-8").read()
            for call in re.finditer(r"target_include_directories\(([^)]*)\)", text):
                visible = False
                for word in call.group(1).split():
                    if word in ("PUBLIC", "INTERFACE"):
                        visible = True
                    elif word == "PRIVATE":
                        visible = False
                    elif visible and word.startswith("${CMAKE_CURRENT_SOURCE_DIR}"):
                        rest = word[len("${CMAKE_CURRENT_SOURCE_DIR}"):].strip("/")
                        public.append(os.path.normpath(os.path.join(here, rest)))
    return public


def check_cmake(root, findings):
    for top in list(LAYERS) + ["contrib"]:
        for path in files_under(root, top):
            name = os.path.basename(path)
            if name != "CMakeLists.txt" and not name.endswith(".cmake"):
                continue
            text = open(path, encoding="utf-8").read()
            rel = os.path.relpath(path, root)
            for m in CMAKE_PATH.finditer(text):
                if m.group(1) != top:
                    findings.append(f"{rel}: names {m.group(0)}..., a path into another folder")
            for m in re.finditer(r"add_subdirectory\(\s*([^\s)]+)", text):
                if ".." in m.group(1) or "SOURCE_DIR" in m.group(1):
                    findings.append(f"{rel}: add_subdirectory({m.group(1)}) adds a folder outside its own")
            if re.search(r"(^|[\s\"(/}])\.\./", text, re.M):
                findings.append(f"{rel}: a relative path leaves its folder (../)")


def check_includes(root, findings):
    public = public_folders(root)
    every_source = [os.path.relpath(p, root) for top in list(LAYERS) + ["tests"]
                    for p in files_under(root, top) if SOURCE.search(p)]

    def is_public(path):
        return any(path.startswith(folder + os.sep) for folder in public)

    def resolve(rel, target):
        here = os.path.normpath(os.path.join(os.path.dirname(rel), target))
        if os.path.exists(os.path.join(root, here)):
            return here
        for folder in public:
            if os.path.exists(os.path.join(root, folder, target)):
                return os.path.join(folder, target)
        # Through a private include directory: the file of that name nearest to the includer.
        candidates = [c for c in every_source if c.endswith(os.sep + target)]
        candidates.sort(key=lambda c: c.split(os.sep)[0] != rel.split(os.sep)[0])
        return candidates[0] if candidates else None

    graph = {}  # file -> files it includes (within the repository)
    for top in list(LAYERS) + ["tests"]:
        for path in files_under(root, top):
            if not SOURCE.search(path):
                continue
            rel = os.path.relpath(path, root)
            parts = rel.split(os.sep)
            owner = parts[1] if top == "tests" and len(parts) > 2 else top
            text = open(path, encoding="utf-8", errors="replace").read()
            edges = graph.setdefault(rel, set())
            for _, target in INCLUDE.findall(text):
                resolved = resolve(rel, target)
                if resolved is None:
                    continue  # a system or third-party header
                edges.add(resolved)
                to = resolved.split(os.sep)[0]
                if to == top or (top == "tests" and to == owner):
                    continue  # its own folder; tests/<layer> may look inside its layer
                if to not in LAYERS or not is_public(resolved):
                    findings.append(f"{rel}: includes \"{target}\" ({resolved}), which {to}/ does not make public")
                elif top in LAYERS and to not in LAYERS[top]:
                    findings.append(f"{rel}: includes {target} of {to}/, which {top}/ may not use")
    return graph


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def check_cycles(graph, findings):
    for component in cycles(graph):
        findings.append("include cycle between files: " + " <-> ".join(component))
    # Sub-folders of a folder: allreduce/src/core -> allreduce/src/transport, and so on.
    folders = {}
    for f, targets in graph.items():
        for t in targets:
            a, b = os.path.dirname(f), os.path.dirname(t)
            if a != b:
                folders.setdefault(a, set()).add(b)
    for component in cycles(folders):
        findings.append("include cycle between folders: " + " <-> ".join(component))


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    findings = []
    check_cmake(root, findings)
    graph = check_includes(root, findings)
    check_cycles(graph, findings)
    for f in findings:
        print(f)
    files = len(graph)
    if findings:
        print(f"check_layers: {len(findings)} finding(s) in {files} sources")
        return 1
    print(f"check_layers: {files} sources, {len(LAYERS)} layers: CMake paths stay in their folders, "
          "includes run down, no include cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
