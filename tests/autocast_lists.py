"""PyTorch's CPU autocast op lists, written from its documentation
(https://pytorch.org/docs/stable/amp.html, "CPU Op-Specific Behavior":
"CPU Ops that can autocast to bfloat16", "CPU Ops that can autocast to
float32", "CPU Ops that promote to the widest input type"; float16 shares
the bfloat16 list), by their ATen names, and where each lives in
ferrograd's public API (``(surface, name)``, surfaces as the registry's:
"function", "method", "F", "linalg")."""

LOWER = (
    "conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm addbmm linear matmul _convolution "
    "conv_tbc mkldnn_rnn_layer conv_transpose1d conv_transpose2d conv_transpose3d prelu "
    "scaled_dot_product_attention _native_multi_head_attention"
).split()

FP32 = (
    "avg_pool3d binary_cross_entropy grid_sampler grid_sampler_2d _grid_sampler_2d_cpu_fallback "
    "grid_sampler_3d polar prod quantile nanquantile stft cdist trace view_as_complex "
    "cholesky_inverse cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d "
    "max_unpool2d max_unpool3d adaptive_avg_pool3d reflection_pad1d reflection_pad2d "
    "replication_pad1d replication_pad2d replication_pad3d mse_loss cosine_embedding_loss "
    "nll_loss nll_loss2d hinge_embedding_loss poisson_nll_loss cross_entropy_loss l1_loss "
    "huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss multi_margin_loss "
    "ctc_loss kl_div multilabel_margin_loss binary_cross_entropy_with_logits fft_fft fft_ifft "
    "fft_fft2 fft_ifft2 fft_fftn fft_ifftn fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn "
    "fft_irfftn fft_hfft fft_ihfft linalg_cond linalg_matrix_rank linalg_solve linalg_cholesky "
    "linalg_svdvals linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product "
    "linalg_tensorinv linalg_tensorsolve fake_quantize_per_tensor_affine geqrf _lu_with_info qr "
    "svd triangular_solve fractional_max_pool2d fractional_max_pool3d adaptive_max_pool3d "
    "multilabel_margin_loss_forward linalg_qr linalg_cholesky_ex linalg_svd linalg_eig "
    "linalg_eigh linalg_lstsq linalg_inv_ex"
).split()

PROMOTE = ["cat", "stack", "index_copy"]

POLICY = {**{n: "lower_precision_fp" for n in LOWER}, **{n: "fp32" for n in FP32},
          **{n: "promote" for n in PROMOTE}}

#: ATen name -> the public ferrograd callables that reach it (where the name
#: differs or the op has several entry points). Names absent here are looked
#: up as ``ferrograd.<name>``, ``Tensor.<name>`` and ``nn.functional.<name>``.
PUBLIC = {
    "linalg_vecdot": [("linalg", "vecdot")],
    "_native_multi_head_attention": [("F", "multi_head_attention_forward")],
    "cross_entropy_loss": [("F", "cross_entropy")],
    "nll_loss2d": [("F", "nll_loss")],
    "grid_sampler": [("F", "grid_sample")],
    "grid_sampler_2d": [("F", "grid_sample")],
    "grid_sampler_3d": [("F", "grid_sample")],
    "adaptive_max_pool3d": [("F", "adaptive_max_pool3d"), ("F", "adaptive_max_pool3d_with_indices")],
    "linalg_matrix_rank": [("linalg", "matrix_rank")],
    "linalg_solve": [("linalg", "solve")],
    "linalg_cholesky": [("linalg", "cholesky")],
    "linalg_cholesky_ex": [("linalg", "cholesky_ex")],
    "linalg_svdvals": [("linalg", "svdvals")],
    "linalg_eigvals": [("linalg", "eigvals")],
    "linalg_eigvalsh": [("linalg", "eigvalsh")],
    "linalg_inv": [("linalg", "inv")],
    "linalg_inv_ex": [("linalg", "inv_ex")],
    "linalg_householder_product": [("linalg", "householder_product")],
    "linalg_tensorinv": [("linalg", "tensorinv")],
    "linalg_tensorsolve": [("linalg", "tensorsolve")],
    "linalg_cond": [("linalg", "cond")],
    "linalg_qr": [("linalg", "qr")],
    "linalg_svd": [("linalg", "svd")],
    "linalg_eig": [("linalg", "eig")],
    "linalg_eigh": [("linalg", "eigh")],
    "linalg_lstsq": [("linalg", "lstsq")],
}
