// Tests of llm/secrets: written with the backends work.
#include <gtest/gtest.h>
