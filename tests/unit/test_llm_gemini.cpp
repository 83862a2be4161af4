// Tests of llm/gemini: written with the backends work.
#include <gtest/gtest.h>
