// Tests of llm/openai: written with the backends work.
#include <gtest/gtest.h>
