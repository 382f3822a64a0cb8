// The fields a child's request body gets from its lease, built in one place for every caller (the
// door's proxy and the pipeline executor): the `model` the child knows, and in shared-base mode the
// adapter scales that select the profile's own LoRA (docs/supervisor.md, "Shared base").
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ledger/plan.hpp"

namespace kevlaya::supervisor {

// Sets body["model"] to `model` when it is not empty, and body["lora"] to `lora` (a lease's
// lora_scales) when that is not empty. `body` must be an object; its other
// members keep their order (a JSON schema's property order is the order llama-server's grammar
// makes the model write them in).
void set_child_fields(nlohmann::ordered_json& body, const std::string& model,
                      const std::vector<ledger::LoraScale>& lora);

// The `model` to send a child for a request that named `requested`: `upstream` (the name its
// server knows: Lease::upstream_model) when the request named something else (an alias, the
// profile's name for a remote's own), else "" (the body's stays, or there is none).
std::string child_model(const std::string& requested, const std::string& upstream);

}  // namespace kevlaya::supervisor
