// Implementation of coll_config.hpp.
#include "coll_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ctran/checks.hpp"

namespace rcclx::nccl {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> split(const std::string& s, char by) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = s.find(by, start)) != std::string::npos; start = at + 1)
    parts.push_back(s.substr(start, at - start));
  parts.push_back(s.substr(start));
  return parts;
}

/// The list algSelection gives `collective` ("all_reduce" is "allreduce" there): the segment
/// "allreduce:LIST" of a "name:LIST;name:LIST" selection, or the whole selection without names;
/// "" when it names other collectives only.
std::string listFor(const std::string& selection, const char* collective) {
  std::string wanted = lower(collective);
  wanted.erase(std::remove(wanted.begin(), wanted.end(), '_'), wanted.end());
  for (const std::string& segment : split(selection, ';')) {
    const size_t colon = segment.find(':');
    if (colon == std::string::npos) return trimmed(segment);
    if (lower(trimmed(segment.substr(0, colon))) == wanted)
      return trimmed(segment.substr(colon + 1));
  }
  return "";
}

/// The all_reduce algorithm a (lower-case) name means here, "" for none.
std::string allReduceAlgo(const std::string& name) {
  static const char* const kOurs[] = {"ring", "dda_flat",     "dda_tree", "dda_large",
                                      "flat", "hierarchical", "auto"};
  for (const char* ours : kOurs)
    if (name == ours) return ours;
  if (name == "tree") return "dda_tree";  // NCCL's Tree: our latency tree
  return "";
}

}  // namespace

void applyCollConfig(const ncclCollConfig_t* config, const char* collective, CallOptions& opts) {
  if (config == nullptr) return;
  if (config->magic != NCCL_API_MAGIC) {
    char magic[16];
    std::snprintf(magic, sizeof(magic), "0x%x", config->magic);
    throw ctran::InvalidArgument(ctran::strCat("config->magic ", magic,
                                               " is not NCCL_API_MAGIC (initialise the config "
                                               "with NCCL_COLLCONFIG_INITIALIZER)"));
  }
  CTRAN_CHECK(config->size >= sizeof(ncclCollConfig_t) && config->size <= (size_t{1} << 20),
              ctran::InvalidArgument, "config->size ", config->size,
              " is not an "
              "ncclCollConfig_t's (",
              sizeof(ncclCollConfig_t), " bytes or more)");
  const char* selection = config->algSelection;
  if (selection == nullptr || *selection == '\0') return;
  const std::string list = listFor(selection, collective);
  if (list.empty() || list[0] == '^') return;  // NCCL's algorithms excluded: ours are left
  const bool allReduce = std::strcmp(collective, "all_reduce") == 0;
  for (const std::string& raw : split(list, ',')) {
    const std::string name = lower(trimmed(raw));
    if (allReduce && !allReduceAlgo(name).empty()) {
      opts.algo = allReduceAlgo(name);
      return;
    }
    if (!allReduce && (name == "ring" || name == "auto")) return;  // their one algorithm
  }
  CTRAN_CHECK(config->forceAlgSelection == 0, ctran::InvalidArgument, "config->algSelection '",
              selection, "' names no algorithm this library has for ", collective,
              allReduce ? " (ring, dda_flat, dda_tree, dda_large, flat, hierarchical, auto; "
                          "NCCL's Ring and Tree run as ring and dda_tree)"
                        : " (it runs one, named ring)",
              "; set config->forceAlgSelection to 0 to let the library choose");
}

}  // namespace rcclx::nccl
