// Tests of llm/cache: written with the backends work.
#include <gtest/gtest.h>
