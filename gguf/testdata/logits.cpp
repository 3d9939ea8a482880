// logits: libllama's teacher-forced logits for TestLlamaCppLogits. Loads a
// GGUF on the CPU, decodes the given token ids as one batch at positions
// 0..n-1 (one sequence, every position's logits wanted) and writes
// n_vocab then, per position, n_vocab float32 logits (little-endian) to OUT.
//
//   logits MODEL OUT ID...
//
// Built by the test against bench/llama.cpp's static libllama/libggml.
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

static void quiet(enum ggml_log_level level, const char * text, void *) {
    if (level >= GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL OUT ID...\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const int n = argc - 3;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n < 256 ? 256 : n;
    cp.n_batch = cp.n_ubatch = cp.n_ctx;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.no_perf = true;
    cp.type_k = cp.type_v = GGML_TYPE_F32; // no f16 rounding of the cache
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;

    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot make a context\n");
        return 1;
    }
    llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = atoi(argv[3 + i]);
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = n;
    if (llama_decode(ctx, b) != 0) {
        fprintf(stderr, "llama_decode failed\n");
        return 1;
    }
    const int32_t V = llama_vocab_n_tokens(llama_model_get_vocab(model));
    FILE * f = fopen(argv[2], "wb");
    if (!f || fwrite(&V, sizeof V, 1, f) != 1) {
        return 1;
    }
    for (int i = 0; i < n; i++) {
        if (fwrite(llama_get_logits_ith(ctx, i), sizeof(float), V, f) != (size_t) V) {
            return 1;
        }
    }
    fclose(f);
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
