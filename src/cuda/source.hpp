// A CUDA-aware view of a source file: a lexer that knows comments, string and character
// literals, the preprocessor, templates and attributes well enough to find every kernel, its
// signature, body and parameters. Used to show kernels in prompts and to check edits.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace optimas::cuda {

enum class TokenKind { identifier, number, string, character, punct, preprocessor };

struct Token {
  TokenKind kind;
  std::string_view text; // a view into the source
  std::size_t offset = 0;
  int line = 0; // 1-based
};

// Characters of C++ identifiers: the first, and the rest.
bool ident_start(char c);
bool ident_char(char c);

// Comments are dropped; a preprocessor directive (with its continuations) is one token.
std::vector<Token> lex(std::string_view source);

struct Parameter {
  std::string type; // "const float *__restrict__"
  std::string name; // "x"
  bool pointer = false;
  bool const_pointee = false; // const T* (the data is read-only through it)
  bool restrict_ = false;
};

struct Function {
  std::string name;
  bool kernel = false; // __global__ (else __device__)
  bool is_template = false;
  std::string launch_bounds; // the arguments of __launch_bounds__, if any
  std::vector<Parameter> parameters;
  std::string signature;   // from `template`/qualifiers to the closing ')', whitespace-normalised
  int first_line = 0;      // the declaration's first line (template header included)
  int body_first_line = 0; // line of '{'
  int last_line = 0;       // line of the closing '}'
  std::size_t begin = 0, body_begin = 0, end = 0; // offsets: declaration, '{', one past '}'
};

struct SourceFile {
  std::string path;
  std::string text;
  std::vector<Function> functions; // __global__ and __device__ definitions, in file order

  const Function* kernel(std::string_view name) const;
  const Function* function(std::string_view name) const;
  // Lines [first, last] with right-aligned line numbers: "  53 | code".
  std::string numbered(int first, int last) const;
  int line_count() const;
};

// Throws Error when the file cannot be read.
SourceFile load_source(const std::string& path);
SourceFile parse_source(std::string path, std::string text);

// The host functions of `f` that launch `kernel` (name<<<...>>> or an instance, name<8><<<...>>>),
// each once, in file order: for each launch, the outermost function body around it (a lambda or a
// block inside a function counts as that function). Kernels and __device__ functions that launch
// it (dynamic parallelism) are not listed: they are in `functions`. A Function with kernel false.
std::vector<Function> launching_functions(const SourceFile& f, std::string_view kernel);

// A kernel launch as written: `name<<<grid, block, shared, stream>>>(...)` or an instance's,
// `name<8><<<...>>>(...)`.
struct Launch {
  std::string kernel;              // the name, without template arguments
  std::vector<std::string> config; // the arguments between the chevrons, whitespace-normalised
  int line = 0;                    // of the name
  std::vector<std::pair<std::size_t, std::size_t>> config_offsets; // each argument's [begin, end) in the text
  bool call = false;                                               // `(...)` follows the chevrons
  std::vector<std::string> args; // the call's arguments, each its tokens joined without spaces ("x+n")
};

// Every launch in the text, in order.
std::vector<Launch> find_launches(std::string_view text);

// The host functions of `f` that call a function whose name begins with one of `prefixes`
// ("cudaMemcpy" finds cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D), as launching_functions finds them.
std::vector<Function> calling_functions(const SourceFile& f, const std::vector<std::string>& prefixes);

// Identifiers used in [begin, end) of the text (for finding the device functions a kernel calls).
std::vector<std::string> identifiers_in(std::string_view text);

// Whitespace-normalised token string, to compare signatures regardless of layout.
std::string normalise(std::string_view code);

} // namespace optimas::cuda
