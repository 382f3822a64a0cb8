// Host memory the children may still take: MemAvailable, capped by the memory limit of the cgroup
// this process runs in (a container's `--memory`, a systemd unit's MemoryMax), which
// /proc/meminfo does not show. Pure parsing plus one reader over a file-system root.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

namespace kevlaya::warm {

// Headroom under one cgroup's memory limit, in bytes: limit - (usage - inactive_file), the working
// set the kernel reclaims last (what `docker stats` and the kubelet count), floored at 0. nullopt
// when `limit` is "max" / unlimited (v1 writes a value near 2^63) or a file cannot be parsed.
// v2: limit = memory.max, usage = memory.current, stat = memory.stat (inactive_file);
// v1: memory.limit_in_bytes, memory.usage_in_bytes, memory.stat (total_inactive_file).
std::optional<std::uint64_t> cgroup_headroom(std::string_view limit, std::string_view usage, std::string_view stat);

// The smallest headroom over every memory cgroup this process is in and their ancestors (a limit
// set on a parent binds too), read under `root` (normally /sys/fs/cgroup) for the membership
// listed in `self_cgroup` (the text of /proc/self/cgroup). A container sees its own cgroup at the
// root, whatever the path in /proc/self/cgroup says: a path that does not exist falls back to it.
std::optional<std::uint64_t> cgroup_headroom_bytes(std::string_view self_cgroup, const std::filesystem::path& root);

// MemAvailable from /proc/meminfo, capped by cgroup_headroom_bytes, in MiB; nullopt when unknown.
std::optional<std::int64_t> mem_available_mib();

}  // namespace kevlaya::warm
