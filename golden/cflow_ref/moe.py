"""Top-k mixture of experts (ARCHITECTURES.md "MoE"): router logits r = W·h,
the k largest (ties: lower expert index first), softmax over the k selected
logits only, output Σ_j s_j · Expert_{i_j}(h) in selection order."""
import torch
import torch.nn.functional as F


class MoE:
    def __init__(self, router, experts, k, softmax_all=False, norm_topk=True):
        """softmax_all (qwen3_moe): probabilities = softmax over all E logits, the k
        largest selected, renormalised over the k when norm_topk (otherwise used
        as they are). Default (Mixtral, pipeline-native): softmax over the k
        selected logits."""
        self.router = router      # [E, d], never quantized
        self.experts = experts    # list of FFN
        self.k = k
        self.softmax_all, self.norm_topk = softmax_all, norm_topk

    def route(self, h):
        """h [T, d] → (indices [T, k] long, weights [T, k] f32)."""
        r = F.linear(h, self.router)
        if self.softmax_all:
            p = torch.softmax(r, dim=-1)
            _, order = torch.sort(p, dim=-1, descending=True, stable=True)
            idx = order[:, :self.k]
            w = torch.gather(p, 1, idx)
            if self.norm_topk:
                w = w / w.sum(dim=-1, keepdim=True)
            return idx, w
        _, order = torch.sort(r, dim=-1, descending=True, stable=True)
        idx = order[:, :self.k]
        w = torch.softmax(torch.gather(r, 1, idx), dim=-1)
        return idx, w

    def __call__(self, h):
        """Decode path: run only the selected experts of each row of h."""
        idx, w = self.route(h)
        out = torch.zeros_like(h)
        for t in range(h.shape[0]):
            acc = torch.zeros_like(h[t])
            for j in range(self.k):
                acc = acc + w[t, j] * self.experts[int(idx[t, j])](h[t:t + 1])[0]
            out[t] = acc
        return out

    def all_experts(self, h):
        """Sequence path: every expert on every row, then the routed mix
        (a different code path than __call__, compared by the tests)."""
        idx, w = self.route(h)
        ys = torch.stack([e(h) for e in self.experts])          # [E, T, d]
        mix = torch.zeros(h.shape[0], len(self.experts))
        mix.scatter_(1, idx, w)                                  # [T, E]
        return torch.einsum("te,etd->td", mix, ys)
