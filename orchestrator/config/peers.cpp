// `peers:` in kevlaya.yaml: other kevlaya-orch doors whose models are imported as remote profiles
// when the door starts (remote/peers.hpp). Only the keys are read here: no network at load.
#include "config/detail.hpp"

namespace kevlaya::config::detail {

void read_peers(Doc& d, const YAML::Node& n, std::vector<PeerCfg>& out) {
  if (!n.IsSequence()) {
    d.error(n, "peers: expected a list of {url, api_key}, got " + describe(n));
    return;
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string key = "peers[" + std::to_string(i) + "]";
    PeerCfg peer;
    peer.loc = d.loc(n[i]);
    std::optional<YAML::Node> url;
    walk_map(d, key, n[i], {
        {"url", [&](const YAML::Node& v) {
           url.emplace(v);
           set_string(d, key + ".url", v, peer.url);
         }},
        {"api_key", [&](const YAML::Node& v) { set_string(d, key + ".api_key", v, peer.api_key); }},
        {"api_key_file", [&](const YAML::Node& v) {
           if (auto k = read_key_file(d, v, false); k && !k->empty()) peer.api_key = *k;
         }},
    });
    if (!n[i].IsMap()) continue;
    if (!url) {
      d.error(n[i], key + ": missing required key 'url' (the peer door, http://HOST:PORT)");
      continue;
    }
    std::string err;
    if (!parse_http_url(peer.url, &err)) {
      d.error(*url, key + ".url: " + err);
      continue;
    }
    out.push_back(std::move(peer));
  }
}

}  // namespace kevlaya::config::detail
