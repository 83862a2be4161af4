// Tests of llm/anthropic: written with the backends work.
#include <gtest/gtest.h>
