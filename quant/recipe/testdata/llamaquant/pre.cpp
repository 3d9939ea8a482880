// pre.cpp - what the type-choice functions of llama.cpp's
// src/llama-quant.cpp need around them, so recipe_cpp_test.go can compile
// them unmodified (copied out of the file between fixed markers) without
// the rest of libllama: llama_model reduced to the facts the rules read,
// the two ggml helpers they call, silent logging.
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "ggml.h"
#include "llama.h"

enum llm_arch { LLM_ARCH_LLAMA, LLM_ARCH_FALCON, LLM_ARCH_BAILINGMOE3, LLM_ARCH_OTHER };
enum llm_type { LLM_TYPE_UNKNOWN, LLM_TYPE_70B };
enum llm_tensor { LLM_TENSOR_POS_EMBD, LLM_TENSOR_TOKEN_TYPES };

struct mock_tn {
    std::string operator()(llm_tensor t, const char * suffix) const {
        return std::string(t == LLM_TENSOR_POS_EMBD ? "position_embd" : "token_types") + "." + suffix;
    }
};
#define LLM_TN(arch) mock_tn()

struct mock_hparams {
    uint32_t n_expert    = 0;
    uint32_t n_head      = 1;
    uint32_t n_head_kv   = 1;
    uint32_t n_layer_all = 0;
    uint32_t n_gqa(uint32_t il = 0) const { (void) il; return n_head / n_head_kv; }
};

struct llama_model {
    llm_arch     arch = LLM_ARCH_LLAMA;
    llm_type     type = LLM_TYPE_UNKNOWN;
    mock_hparams hparams;
};

#define LLAMA_LOG_INFO(...)  do {} while (0)
#define LLAMA_LOG_WARN(...)  do {} while (0)
#define LLAMA_LOG_ERROR(...) do {} while (0)
#define LLAMA_LOG_DEBUG(...) do {} while (0)

static std::string format(const char * fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

// ggml.c's answers for the types the recipes reach.
static const struct { ggml_type t; const char * name; int64_t blck; } mock_types[] = {
    {GGML_TYPE_F32, "f32", 1}, {GGML_TYPE_F16, "f16", 1}, {GGML_TYPE_Q4_0, "q4_0", 32}, {GGML_TYPE_Q4_1, "q4_1", 32},
    {GGML_TYPE_Q5_0, "q5_0", 32}, {GGML_TYPE_Q5_1, "q5_1", 32}, {GGML_TYPE_Q8_0, "q8_0", 32},
    {GGML_TYPE_Q2_K, "q2_K", 256}, {GGML_TYPE_Q3_K, "q3_K", 256}, {GGML_TYPE_Q4_K, "q4_K", 256},
    {GGML_TYPE_Q5_K, "q5_K", 256}, {GGML_TYPE_Q6_K, "q6_K", 256},
};

int64_t ggml_blck_size(enum ggml_type t) {
    for (const auto & m : mock_types) if (m.t == t) return m.blck;
    fprintf(stderr, "mock: ggml_blck_size(%d)\n", (int) t);
    exit(3);
}

const char * ggml_type_name(enum ggml_type t) {
    for (const auto & m : mock_types) if (m.t == t) return m.name;
    return "?";
}

bool ggml_is_quantized(enum ggml_type t) { return t != GGML_TYPE_F32 && t != GGML_TYPE_F16; }

int ggml_n_dims(const struct ggml_tensor * t) {
    for (int i = GGML_MAX_DIMS - 1; i >= 1; --i) if (t->ne[i] > 1) return i + 1;
    return 1;
}

const char * ggml_get_name(const struct ggml_tensor * t) { return t->name; }

// llama_model_loader's weight_name_comparer is copied out of
// llama-model-loader.h below this line.
