// Secrets drawn from the kernel's CSPRNG (getrandom(2)).
#pragma once
#include <cstddef>
#include <string>

namespace kevlaya {

// `bytes` random bytes as 2*bytes lowercase hex digits. Blocks only before the kernel's pool is
// seeded at boot; aborts (a bug-level failure) if the kernel refuses.
std::string random_hex(std::size_t bytes);

}  // namespace kevlaya
