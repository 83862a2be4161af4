// Tests of llm/ollama: written with the backends work.
#include <gtest/gtest.h>
