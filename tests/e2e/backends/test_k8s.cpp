// tools/k8s/: every manifest parses (yaml-cpp), and what must agree does: each Deployment runs the
// project image with the config its ConfigMap holds (loaded here like the pod would, mounts
// mapped into a temp dir), probes /health on the port that config listens on, a Service reaches
// that port, node doors hold one GPU each, the front door's peers are the node Services.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "config/config.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
using namespace kevlaya::test;
namespace fs = std::filesystem;

namespace {

std::vector<YAML::Node> manifests() {
  std::vector<YAML::Node> out;
  for (const auto& e : fs::directory_iterator(source_dir() / "tools/k8s"))
    if (e.path().extension() == ".yaml")
      for (const auto& doc : YAML::LoadAllFromFile(e.path().string())) out.push_back(doc);
  return out;
}

const YAML::Node* find(const std::vector<YAML::Node>& all, const std::string& kind, const std::string& name) {
  for (const auto& m : all)
    if (m["kind"].as<std::string>() == kind && m["metadata"]["name"].as<std::string>() == name) return &m;
  return nullptr;
}

// Writes the pod's view of its config (ConfigMap items, empty mounts, models named by the
// profiles) under `root` and returns the config file's path there.
fs::path materialize(const std::vector<YAML::Node>& all, const YAML::Node& pod, const fs::path& root,
                     const std::string& config_file) {
  const auto& c = pod["containers"][0];
  std::vector<std::string> mounts;
  for (const auto& m : c["volumeMounts"]) mounts.push_back(m["mountPath"].as<std::string>());
  mounts.push_back("/etc/kevlaya/pipelines");  // in the image
  std::sort(mounts.begin(), mounts.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  const auto mapped = [&](std::string text) {
    for (const auto& m : mounts)
      for (auto at = text.find(m); at != std::string::npos; at = text.find(m, at + root.string().size() + m.size()))
        if (at == 0 || text[at - 1] != '/') text.replace(at, m.size(), (root.string() + m));
    return text;
  };
  for (const auto& m : mounts) fs::create_directories(root.string() + m);
  for (const auto& m : c["volumeMounts"]) {
    const std::string vol = m["name"].as<std::string>();
    for (const auto& v : pod["volumes"]) {
      if (v["name"].as<std::string>() != vol || !v["configMap"]) continue;
      const auto* cm = find(all, "ConfigMap", v["configMap"]["name"].as<std::string>());
      REQUIRE(cm);
      for (const auto& item : v["configMap"]["items"]) {
        const std::string text = (*cm)["data"][item["key"].as<std::string>()].as<std::string>();
        write_text(root.string() + m["mountPath"].as<std::string>() + "/" + item["path"].as<std::string>(), mapped(text));
        std::smatch g;
        for (auto it = text.cbegin(); std::regex_search(it, text.cend(), g, std::regex("\\$\\{KEVLAYA_MODELS\\}/(\\S+)"));
             it = g[0].second)
          write_text(root / "models" / g[1].str(), "GGUF dummy");
      }
    }
  }
  return root.string() + config_file;
}

// The pod's environment for loading its config: plain values and the Secret's keys.
void set_env(const std::vector<YAML::Node>& all, const YAML::Node& c, const fs::path& root) {
  for (const auto& e : c["env"]) {
    std::string value;
    if (e["value"]) value = e["value"].as<std::string>();
    if (e["valueFrom"]) {
      const auto& ref = e["valueFrom"]["secretKeyRef"];
      const auto* secret = find(all, "Secret", ref["name"].as<std::string>());
      REQUIRE(secret);
      REQUIRE((*secret)["stringData"][ref["key"].as<std::string>()]);
      value = (*secret)["stringData"][ref["key"].as<std::string>()].as<std::string>();
    }
    ::setenv(e["name"].as<std::string>().c_str(), value.c_str(), 1);
  }
  ::setenv("KEVLAYA_MODELS", (root / "models").c_str(), 1);
}

bool selects(const YAML::Node& service, const YAML::Node& pod_labels) {
  for (const auto& kv : service["spec"]["selector"])
    if (!pod_labels[kv.first.as<std::string>()] ||
        pod_labels[kv.first.as<std::string>()].as<std::string>() != kv.second.as<std::string>())
      return false;
  return true;
}

}  // namespace

TEST_CASE("k8s example: images, probes, resources, ports and peers agree with the configs", "[backends][k8s]") {
  const auto all = manifests();
  REQUIRE(all.size() >= 8);
  int nodes = 0, fronts = 0;
  std::vector<std::string> node_urls;
  std::vector<std::vector<std::string>> peer_lists;
  for (const auto& d : all) {
    if (d["kind"].as<std::string>() != "Deployment") continue;
    const std::string name = d["metadata"]["name"].as<std::string>();
    INFO(name);
    const auto& pod = d["spec"]["template"]["spec"];
    const auto& c = pod["containers"][0];
    CHECK(c["image"].as<std::string>().rfind("kevlaya-orch:", 0) == 0);  // the project's image
    const auto cmd = c["command"].as<std::vector<std::string>>();
    REQUIRE(cmd.size() == 3);
    CHECK(cmd[0] == "kevlaya-orch");
    CHECK(cmd[1] == "serve");
    const int port = c["ports"][0]["containerPort"].as<int>();
    for (const char* probe : {"readinessProbe", "livenessProbe"}) {
      CHECK(c[probe]["httpGet"]["path"].as<std::string>() == "/health");
      CHECK(c[probe]["httpGet"]["port"].as<int>() == port);
    }
    TempDir root("k8s-" + name);
    set_env(all, c, root.path());
    const auto loaded = config::load(materialize(all, pod, root.path(), cmd[2]));
    for (const auto& diag : loaded.diagnostics) UNSCOPED_INFO(diag.format());
    REQUIRE(loaded.ok());
    CHECK(loaded.config.orch.listen.port == port);
    CHECK(loaded.config.orch.listen.host == "0.0.0.0");
    CHECK_FALSE(loaded.config.orch.api_keys.empty());  // reachable from the cluster: keys required
    const YAML::Node* svc = nullptr;
    for (const auto& s : all)
      if (s["kind"].as<std::string>() == "Service" && selects(s, d["spec"]["template"]["metadata"]["labels"])) svc = &s;
    REQUIRE(svc);
    CHECK((*svc)["spec"]["ports"][0]["targetPort"].as<int>() == port);
    const bool gpu = c["resources"]["limits"]["nvidia.com/gpu"].IsDefined();
    if (loaded.config.orch.peers.empty()) {  // a node door: the GPU, its own models
      ++nodes;
      CHECK(gpu);
      if (gpu) CHECK(c["resources"]["limits"]["nvidia.com/gpu"].as<int>() == 1);
      CHECK(d["spec"]["replicas"].as<int>() == 1);
      CHECK(d["spec"]["strategy"]["type"].as<std::string>() == "Recreate");
      CHECK_FALSE(loaded.config.profiles.empty());
      node_urls.push_back("http://" + (*svc)["metadata"]["name"].as<std::string>() + ":" +
                          std::to_string((*svc)["spec"]["ports"][0]["port"].as<int>()));
      for (const auto& p : loaded.config.profiles) CHECK(p.model.string().find(root.path().string() + "/models/") == 0);
    } else {  // the front door: no GPU, no profiles, every node as a peer
      ++fronts;
      CHECK_FALSE(gpu);
      CHECK(loaded.config.profiles.empty());
      std::vector<std::string> urls;
      for (const auto& p : loaded.config.orch.peers) {
        CHECK(p.api_key == "change-me-node");
        urls.push_back(p.url);
      }
      peer_lists.push_back(urls);
    }
  }
  CHECK(nodes == 2);
  CHECK(fronts == 1);
  std::sort(node_urls.begin(), node_urls.end());
  for (auto urls : peer_lists) {
    std::sort(urls.begin(), urls.end());
    CHECK(urls == node_urls);
  }
}
