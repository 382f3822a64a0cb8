// A child's log file (the lines of one batch share one time stamp) and the tail kept for errors.
#include <catch2/catch.hpp>

#include <regex>
#include <sstream>

#include "supervisor/child_log.hpp"
#include "support/paths.hpp"

using namespace kevlaya;

TEST_CASE("child log: a batch's lines land one per line with one time stamp, written when the batch is", "[supervisor]") {
  test::TempDir dir("child-log");
  supervisor::ChildLog log;
  log.open(dir.path(), "kev");
  const auto file = supervisor::child_log_path(dir.path(), "kev");
  log.line("first");
  log.line("second [with] brackets");
  CHECK(test::read_text(file).empty());  // queued until the batch is written
  log.write();
  std::istringstream in(test::read_text(file));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  REQUIRE(lines.size() == 2);
  const std::regex stamped(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} \[kev\] (.*)$)");
  std::smatch m;
  REQUIRE(std::regex_match(lines[0], m, stamped));
  CHECK(m[1] == "first");
  REQUIRE(std::regex_match(lines[1], m, stamped));
  CHECK(m[1] == "second [with] brackets");
  CHECK(lines[0].substr(0, 23) == lines[1].substr(0, 23));
  log.write();  // nothing queued: nothing written
  log.line("third");
  log.write();
  CHECK(test::read_text(file).size() == 2 * lines[0].size() + lines[1].size() + 3);  // "third" is as long as "first"
}

// A batch may hold 4 MiB of a chatty child's output: the queue goes to the sink every 64 KiB.
TEST_CASE("child log: a long batch reaches the file 64 KiB at a time, all its lines under one stamp", "[supervisor]") {
  test::TempDir dir("child-log-long");
  supervisor::ChildLog log;
  log.open(dir.path(), "kev");
  const auto file = supervisor::child_log_path(dir.path(), "kev");
  const std::string text(100, 'x');
  for (int i = 0; i < 1000; ++i) log.line(text);  // ~130 KiB with the prefixes
  CHECK(test::read_text(file).size() >= 56 * 1024);  // in the file before write() (stdio holds at most 8 KiB)
  log.write();
  std::istringstream in(test::read_text(file));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  REQUIRE(lines.size() == 1000);
  for (const auto& l : lines) {
    CHECK(l.substr(0, 23) == lines[0].substr(0, 23));
    CHECK(l.substr(l.size() - text.size()) == text);
  }
}

TEST_CASE("child log: the tail ring keeps the last lines, oldest first, reusing its slots", "[supervisor]") {
  supervisor::LineRing ring(3);
  ring.next() = "one";
  ring.next() = "two";
  CHECK(ring.lines() == std::vector<std::string>{"one", "two"});
  ring.next() = "three";
  ring.next().assign("four");  // takes the oldest slot
  std::string& fifth = ring.next();
  CHECK(fifth == "two");  // the slot it reuses still holds the line it replaces
  fifth = "five";
  CHECK(ring.lines() == std::vector<std::string>{"three", "four", "five"});
  supervisor::LineRing none(0);
  none.next() = "dropped";
  CHECK(none.lines().empty());
}
