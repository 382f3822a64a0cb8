// Whether an address names this machine's loopback: the one rule for the door's Host check, the
// "no api_keys" warnings of `check` and `serve`, and anything else that asks.
#pragma once
#include <string_view>

namespace kevlaya {

// True for "localhost" and for an IP literal in 127.0.0.0/8, ::1, or IPv4 loopback inside IPv6
// (::ffff:127.x.y.z mapped, ::127.x.y.z compatible); brackets around an IPv6 literal are allowed.
bool is_loopback_host(std::string_view host);

}  // namespace kevlaya
