// The variant pipeline's scheduler (loop/pipeline.hpp): builds run ahead on their lanes, no more
// at once than there are lanes, in the order submitted; a build whose turn comes while it is
// still queued runs on the caller's thread; a failure reaches the caller; the builds queued when
// the pipeline stops never start. Synchronised by promises, never by sleeps.
#include "loop/pipeline.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>
#include <stdexcept>
#include <thread>

using namespace optimas::loop;
using nlohmann::json;

TEST(BuildAhead, BuildsRunAheadOnTheirLanesNoMoreAtOnceThanLanes) {
  std::atomic<int> running{0}, most{0};
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<int> started{0};
  std::promise<void> two_started;
  BuildAhead ahead(2);
  EXPECT_EQ(ahead.jobs(), 2);
  for (int i = 0; i < 5; ++i)
    ahead.submit("p" + std::to_string(i), [&, i](int lane) {
      int now = ++running;
      for (int m = most; now > m && !most.compare_exchange_weak(m, now);) {
      }
      if (++started == 2) two_started.set_value();
      if (i < 2) gate.wait(); // the first two hold both lanes until released
      --running;
      return json{{"point", i}, {"lane_seen", lane}};
    });
  two_started.get_future().wait(); // both lanes busy, three queued
  EXPECT_TRUE(ahead.submitted("p4"));
  EXPECT_FALSE(ahead.submitted("p9"));
  go.set_value();
  std::set<int> lanes;
  for (int i = 0; i < 5; ++i) {
    auto r = ahead.take("p" + std::to_string(i));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ((*r)["point"], i);
    EXPECT_EQ((*r)["lane"], (*r)["lane_seen"]);
    EXPECT_TRUE((*r)["build_s"].is_number());
    EXPECT_TRUE((*r)["waited_s"].is_number());
    lanes.insert((*r)["lane"].get<int>());
  }
  EXPECT_LE(most.load(), 2);
  EXPECT_EQ(lanes, (std::set<int>{0, 1}));
  EXPECT_FALSE(ahead.take("p0").has_value()); // taken once
}

TEST(BuildAhead, AQueuedBuildWhoseTurnComesRunsOnTheCallersThread) {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::promise<void> busy;
  BuildAhead ahead(1);
  ahead.submit("a", [&](int) {
    busy.set_value();
    gate.wait();
    return json{{"who", "a"}};
  });
  busy.get_future().wait(); // the one lane holds a
  const auto caller = std::this_thread::get_id();
  std::thread::id ran_on;
  ahead.submit("b", [&](int) {
    ran_on = std::this_thread::get_id();
    return json{{"who", "b"}};
  });
  auto b = ahead.take("b");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ((*b)["who"], "b");
  EXPECT_EQ((*b)["lane"], 0);
  EXPECT_EQ(ran_on, caller);
  release.set_value();
  EXPECT_EQ((*ahead.take("a"))["who"], "a");
}

TEST(BuildAhead, AFailureReachesTheCaller) {
  BuildAhead ahead(1);
  ahead.submit("bad", [](int) -> json { throw std::runtime_error("disk full"); });
  try {
    ahead.take("bad");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "disk full");
  }
  EXPECT_FALSE(ahead.take("nothing").has_value());
}

TEST(BuildAhead, BuildsStillQueuedAtTheEndNeverStart) {
  std::atomic<int> ran{0};
  std::promise<void> release, busy;
  std::shared_future<void> gate = release.get_future().share();
  {
    BuildAhead ahead(1);
    ahead.submit("first", [&](int) {
      busy.set_value();
      gate.wait();
      ++ran;
      return json::object();
    });
    busy.get_future().wait();
    for (int i = 0; i < 3; ++i)
      ahead.submit("later" + std::to_string(i), [&](int) {
        ++ran;
        return json::object();
      });
    ahead.stop();
    release.set_value();
  } // waits for "first"; the others were dropped
  EXPECT_EQ(ran.load(), 1);
}

// While lane 0 is held (a re-profile reads work/building), the other lanes build everything
// submitted; released, lane 0 builds again.
TEST(BuildAhead, AHeldLaneZeroStartsNoBuildUntilReleased) {
  BuildAhead ahead(2);
  ahead.hold_lane0(true);
  std::atomic<int> done{0};
  std::promise<void> all_done;
  for (int i = 0; i < 3; ++i)
    ahead.submit("held" + std::to_string(i), [&](int lane) {
      if (++done == 3) all_done.set_value();
      return json{{"lane_seen", lane}};
    });
  all_done.get_future().wait(); // every one built before any is taken (take would build in lane 0)
  for (int i = 0; i < 3; ++i) EXPECT_EQ((*ahead.take("held" + std::to_string(i)))["lane"], 1);

  ahead.hold_lane0(false);
  // Released: with one lane kept busy, the next build runs on the other, so both lanes build.
  std::promise<void> a_started, b_done, release;
  std::shared_future<void> gate = release.get_future().share();
  ahead.submit("a", [&](int lane) {
    a_started.set_value();
    gate.wait();
    return json{{"lane_seen", lane}};
  });
  a_started.get_future().wait();
  ahead.submit("b", [&](int lane) {
    b_done.set_value();
    return json{{"lane_seen", lane}};
  });
  b_done.get_future().wait();
  release.set_value();
  std::set<int> lanes = {(*ahead.take("a"))["lane"].get<int>(), (*ahead.take("b"))["lane"].get<int>()};
  EXPECT_EQ(lanes, (std::set<int>{0, 1}));
}

TEST(BuildAhead, LanesFollowTheSetting) {
  EXPECT_EQ(build_lanes(0), 0);
  EXPECT_GE(build_lanes(-1), 1);
  EXPECT_EQ(build_lanes(3), private_build_folders() ? 3 : 1);
}
