// EventHub: the supervisor's subscribers (Supervisor::subscribe). publish() runs on the
// supervisor's strand; add/remove may run on any thread.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "supervisor/supervisor.hpp"

namespace kevlaya::supervisor {

struct Subscription::Sub {
  std::recursive_mutex mu;  // held while `fn` runs: reset() waits for a call in progress
  std::function<void(const Event&)> fn;
};

class EventHub {
 public:
  // Registers `fn`; the returned Sub is the subscription's handle.
  std::shared_ptr<Subscription::Sub> add(std::function<void(const Event&)> fn);
  void remove(const std::shared_ptr<Subscription::Sub>& s);  // no-op when unknown
  void publish(Event e);  // stamps e.at now, then calls every subscriber in subscription order

 private:
  std::mutex mu_;  // guards subs_ only (never held while a callback runs)
  std::vector<std::shared_ptr<Subscription::Sub>> subs_;
};

}  // namespace kevlaya::supervisor
