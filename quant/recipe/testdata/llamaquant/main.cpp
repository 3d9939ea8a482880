// main.cpp - reads models from stdin, each ended by "end", and prints for
// each the type llama_tensor_get_type chooses for every tensor, in input
// order, after llama-quantize's preliminary pass (counters over the
// loader's order), then "end"; or "error WHAT" then "end".
//   ftype N | arch llama|falcon | type70b 0|1 | n_expert N | n_layer N
//   imatrix 0|1 | pure 0|1 | override PATTERN TYPE | tensor NAME NE0 NE1 NE2
static int one_model();

int main() {
    int rc;
    while ((rc = one_model()) == 1) {
    }
    return rc;
}

// one_model returns 1 after a model, 0 at EOF, 2 on bad input.
static int one_model() {
    llama_model model;
    llama_model_quantize_params params = {};
    params.quantize_output_tensor = true;
    params.output_tensor_type = GGML_TYPE_COUNT;
    params.token_embedding_type = GGML_TYPE_COUNT;
    std::vector<std::pair<std::string, ggml_type>> ovr;
    std::vector<ggml_tensor> tensors;
    bool imatrix = false;
    char key[64];
    bool ended = false;
    while (scanf("%63s", key) == 1) {
        std::string k(key);
        if (k == "end") { ended = true; break; }
        if (k == "ftype") { int v; scanf("%d", &v); params.ftype = (llama_ftype) v; }
        else if (k == "arch") { char a[32]; scanf("%31s", a); model.arch = strcmp(a, "falcon") == 0 ? LLM_ARCH_FALCON : LLM_ARCH_LLAMA; }
        else if (k == "type70b") { int v; scanf("%d", &v); model.type = v ? LLM_TYPE_70B : LLM_TYPE_UNKNOWN; }
        else if (k == "n_expert") { scanf("%u", &model.hparams.n_expert); }
        else if (k == "n_layer") { scanf("%u", &model.hparams.n_layer_all); }
        else if (k == "imatrix") { int v; scanf("%d", &v); imatrix = v; }
        else if (k == "pure") { int v; scanf("%d", &v); params.pure = v; }
        else if (k == "override") {
            char p[256], t[32]; scanf("%255s %31s", p, t);
            ggml_type gt = GGML_TYPE_COUNT;
            for (const auto & m : mock_types) if (strcasecmp(m.name, t) == 0) gt = m.t;
            ovr.emplace_back(p, gt);
        } else if (k == "tensor") {
            ggml_tensor t = {};
            long long ne[3];
            scanf("%63s %lld %lld %lld", t.name, &ne[0], &ne[1], &ne[2]);
            t.type = GGML_TYPE_F32;
            t.ne[0] = ne[0]; t.ne[1] = ne[1]; t.ne[2] = ne[2]; t.ne[3] = 1;
            tensors.push_back(t);
        } else { fprintf(stderr, "bad key %s\n", key); return 2; }
    }
    if (!ended) return 0;
    std::vector<llama_model_tensor_override> tto;
    for (auto & o : ovr) tto.push_back({o.first.c_str(), o.second});
    tto.push_back({nullptr, GGML_TYPE_COUNT});
    params.tt_overrides = tto.data();

    quantize_state_impl qs(model, &params);
    qs.has_imatrix = imatrix;

    std::map<std::string, size_t, weight_name_comparer> order;
    for (size_t i = 0; i < tensors.size(); i++) order.emplace(tensors[i].name, i);
    std::vector<tensor_metadata> metadata;
    std::vector<size_t> idx;
    for (auto & kv : order) {
        tensor_metadata tm;
        tm.name = kv.first;
        metadata.push_back(tm);
        idx.push_back(kv.second);
    }
    init_quantize_state_counters(qs, metadata);
    ggml_type def = llama_ftype_get_default_type(params.ftype);
    std::vector<std::string> out(tensors.size());
    try {
        for (size_t j = 0; j < idx.size(); j++) {
            ggml_tensor * t = &tensors[idx[j]];
            ggml_type nt = t->type;
            if (tensor_allows_quantization(&params, model.arch, t)) {
                nt = llama_tensor_get_type(qs, &params, t, def, metadata[j]);
            }
            out[idx[j]] = ggml_type_name(nt);
        }
    } catch (const std::exception & e) {
        printf("error %s\nend\n", e.what());
        return 1;
    }
    for (auto & s : out) printf("%s\n", s.c_str());
    printf("end\n");
    return 1;
}
