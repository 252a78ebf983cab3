// Runs a callable that must throw a given gcnpart error type and returns its message, so a test can check the
// type and that the message names file:line:column and the offending value.
#pragma once

#include <doctest/doctest.h>

#include <exception>
#include <string>

namespace gcnpart::testing {

template <class Expected, class Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const Expected& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("wrong exception type, message: " << e.what());
    return {};
  }
  FAIL_CHECK("no exception thrown");
  return {};
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace gcnpart::testing

/// Checks that `msg` contains `part`, printing the whole message when it does not.
#define CHECK_MESSAGE_HAS(msg, part) CHECK_MESSAGE(::gcnpart::testing::contains((msg), (part)), "message: " << (msg))
