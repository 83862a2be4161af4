// Tests of llm/retry: written with the backends work.
#include <gtest/gtest.h>
