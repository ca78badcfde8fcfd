"""Thirteen training scripts written the way well-known PyTorch tutorials write
them, with only the import line changed (``import ferrograd as torch``) and
sizes made small: each runs to the end and asserts what it trained or
computed (a loss that falls, shapes, a value against NumPy or a closed form).

The REINFORCE and VAE-with-distributions scripts use ``torch.distributions``
and the AMP script ``torch.autocast``/``torch.amp.GradScaler``; each of those
is skipped, saying why, when ferrograd lacks the module.
"""

from __future__ import annotations

import copy
import math
import warnings
from contextlib import nullcontext

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F
import ferrograd.optim as optim

needs_distributions = pytest.mark.skipif(
    not hasattr(torch, "distributions"),
    reason="ferrograd.distributions is not in this build (the script's sampling uses it)",
)
needs_amp = pytest.mark.skipif(
    not (hasattr(torch, "autocast") and hasattr(torch, "amp")),
    reason="ferrograd.autocast / ferrograd.amp are not in this build (the script's AMP uses them)",
)


def _falls(losses, factor=0.8):
    """The mean of the last quarter is below ``factor`` times the first quarter's."""
    q = max(1, len(losses) // 4)
    return np.mean(losses[-q:]) < factor * np.mean(losses[:q])


# ----- 1. the 60-minute blitz CNN (CIFAR-10 classifier) ---------------------------------------


def test_blitz_cnn(tmp_path):
    torch.manual_seed(0)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = torch.flatten(x, 1)  # flatten all dimensions except batch
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            x = self.fc3(x)
            return x

    net = Net()
    net.to(device)
    # A learnable stand-in for CIFAR-10: the class decides the image's mean colour.
    labels_all = torch.randint(0, 10, (64,))
    images_all = torch.randn(64, 3, 32, 32) * 0.5 + labels_all.float().view(-1, 1, 1, 1) / 5
    trainloader = [(images_all[i:i + 8], labels_all[i:i + 8]) for i in range(0, 64, 8)]

    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    epoch_losses = []
    printed = []
    for epoch in range(12):  # noqa: B007 - as the tutorial writes it
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):  # noqa: B007 - as the tutorial writes it
            inputs, labels = data[0].to(device), data[1].to(device)
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        printed.append(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 8:.3f}")
        epoch_losses.append(running_loss / 8)
    assert printed[0].startswith("[1,     8] loss: ")
    assert epoch_losses[-1] < 0.75 * epoch_losses[0]

    PATH = tmp_path / "cifar_net.pth"
    torch.save(net.state_dict(), PATH)
    net2 = Net()
    net2.load_state_dict(torch.load(PATH, weights_only=True))
    correct = 0
    total = 0
    with torch.no_grad():
        for images, labels in trainloader:
            outputs = net2(images)
            _, predicted = torch.max(outputs, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    assert total == 64
    assert 100 * correct // total > 30  # well above the 10% of guessing
    assert f"Accuracy of the network on the {total} test images: {100 * correct // total} %"


# ----- 2. char-LSTM language model ------------------------------------------------------------


def test_char_lstm():
    torch.manual_seed(0)
    text = "hello world, hello ferrograd. " * 20
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for ch, i in stoi.items()}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)

    class CharLSTM(nn.Module):
        def __init__(self, vocab_size, hidden_size=48, num_layers=1):
            super().__init__()
            self.embed = nn.Embedding(vocab_size, 16)
            self.lstm = nn.LSTM(16, hidden_size, num_layers, batch_first=True)
            self.fc = nn.Linear(hidden_size, vocab_size)

        def forward(self, x, hidden=None):
            out, hidden = self.lstm(self.embed(x), hidden)
            return self.fc(out), hidden

    model = CharLSTM(len(chars))
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()
    seq_len, batch = 16, 8
    losses = []
    hidden = None
    for step in range(40):  # noqa: B007 - as the tutorial writes it
        ix = torch.randint(0, len(data) - seq_len - 1, (batch,))
        x = torch.stack([data[i:i + seq_len] for i in ix])
        y = torch.stack([data[i + 1:i + seq_len + 1] for i in ix])
        if hidden is not None:
            hidden = tuple(h.detach() for h in hidden)
        logits, hidden = model(x, hidden)
        loss = criterion(logits.view(-1, len(chars)), y.view(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        losses.append(loss.item())
    assert _falls(losses, 0.6)

    model.eval()
    with torch.no_grad():
        idx = torch.tensor([[stoi["h"]]])
        hidden = None
        out = []
        for _ in range(20):
            logits, hidden = model(idx, hidden)
            probs = F.softmax(logits[:, -1, :] / 0.8, dim=-1)
            idx = torch.multinomial(probs, num_samples=1)
            out.append(itos[idx.item()])
    assert len("".join(out)) == 20


# ----- 3. nanoGPT (model.py + train.py, shrunk) -----------------------------------------------


class _LayerNorm(nn.Module):
    """nanoGPT's LayerNorm with an optional bias."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class _CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, flash):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=False)
        self.n_head = n_head
        self.n_embd = n_embd
        self.flash = flash and hasattr(torch.nn.functional, "scaled_dot_product_attention")
        if not self.flash:
            self.register_buffer(
                "bias",
                torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size),
            )

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=None, dropout_p=0, is_causal=True
            )
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class _Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size, flash):
        super().__init__()
        self.ln_1 = _LayerNorm(n_embd, bias=False)
        self.attn = _CausalSelfAttention(n_embd, n_head, block_size, flash)
        self.ln_2 = _LayerNorm(n_embd, bias=False)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd, bias=False), nn.GELU(),
            nn.Linear(4 * n_embd, n_embd, bias=False),
        )  # fmt: skip

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class _GPT(nn.Module):
    def __init__(self, vocab_size, block_size=16, n_layer=2, n_head=2, n_embd=32, flash=True):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([_Block(n_embd, n_head, block_size, flash) for _ in range(n_layer)]),
            ln_f=_LayerNorm(n_embd, bias=False),
        ))  # fmt: skip
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}"
        pos = torch.arange(0, t, dtype=torch.long, device=device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)  # fmt: skip
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        use_fused = device_type == "cuda"
        extra_args = dict(fused=True) if use_fused else dict()
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


@pytest.mark.parametrize("flash", [True, False])
def test_nanogpt(flash):
    torch.manual_seed(1337)
    # train.py's preamble
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"
    ptdtype = {"float32": torch.float32}["float32"]
    ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type,
                                                                        dtype=ptdtype)  # fmt: skip
    torch.set_float32_matmul_precision("high")
    assert torch.get_float32_matmul_precision() == "high"

    data = torch.tensor(np.tile(np.arange(12), 40), dtype=torch.long)
    block_size, batch_size = 16, 8

    def get_batch():
        ix = torch.randint(len(data) - block_size, (batch_size,))
        x = torch.stack([data[i:i + block_size] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])
        if device_type == "cuda":
            x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(
                device, non_blocking=True
            )
        else:
            x, y = x.to(device), y.to(device)
        return x, y

    model = _GPT(12, block_size=block_size, flash=flash)
    model.to(device)
    optimizer = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95), device_type)

    @torch.no_grad()
    def estimate_loss(eval_iters=4):
        out = {}
        model.eval()
        for split in ["train", "val"]:
            losses = torch.zeros(eval_iters)
            for k in range(eval_iters):
                X, Y = get_batch()
                with ctx:
                    logits, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean()
        model.train()
        return out

    first = estimate_loss()
    log = []
    for it in range(60):  # noqa: B007 - as the tutorial writes it
        X, Y = get_batch()
        with ctx:
            logits, loss = model(X, Y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    last = estimate_loss()
    log.append(f"step {it}: train loss {last['train']:.4f}, val loss {last['val']:.4f}")
    assert log[0].startswith("step 59: train loss ")
    assert last["train"] < 0.5 * first["train"]
    assert model.transformer.wte.weight is model.lm_head.weight
    out = model.generate(torch.zeros((1, 1), dtype=torch.long, device=device), 10, top_k=5)
    assert out.shape == (1, 11)


# ----- 4. VAE with checkpoint/resume ----------------------------------------------------------


class _VAE(nn.Module):
    def __init__(self, d=16, h=32, z=4):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc21 = nn.Linear(h, z)
        self.fc22 = nn.Linear(h, z)
        self.fc3 = nn.Linear(z, h)
        self.fc4 = nn.Linear(h, d)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 16))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def _vae_loss(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 16), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def _vae_data():
    g = torch.Generator().manual_seed(3)
    protos = (torch.rand(4, 16, generator=g) > 0.5).float()
    idx = torch.randint(0, 4, (128,), generator=g)
    return protos[idx]


def test_vae_checkpoint_resume(tmp_path):
    torch.manual_seed(0)
    data = _vae_data()
    model = _VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)

    def train_epoch(model, optimizer):
        model.train()
        train_loss = 0
        for i in range(0, 128, 32):  # noqa: B007 - as the tutorial writes it
            x = data[i:i + 32]
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(x)
            loss = _vae_loss(recon_batch, x, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
        return train_loss / 128

    losses = [train_epoch(model, optimizer) for _ in range(5)]
    PATH = tmp_path / "checkpoint.tar"
    epoch = 5
    torch.save({
        "epoch": epoch,
        "model_state_dict": model.state_dict(),
        "optimizer_state_dict": optimizer.state_dict(),
        "loss": losses[-1],
    }, PATH)  # fmt: skip

    # Resume in a fresh model and optimizer, as the tutorial's loading half.
    model2 = _VAE()
    optimizer2 = optim.Adam(model2.parameters(), lr=1e-2)
    checkpoint = torch.load(PATH, weights_only=True)
    model2.load_state_dict(checkpoint["model_state_dict"])
    optimizer2.load_state_dict(checkpoint["optimizer_state_dict"])
    assert checkpoint["epoch"] == 5 and checkpoint["loss"] == losses[-1]
    for p, q in zip(model.parameters(), model2.parameters()):
        assert torch.equal(p, q)
    # Both continue identically from the same random state.
    torch.manual_seed(7)
    a = train_epoch(model, optimizer)
    torch.manual_seed(7)
    b = train_epoch(model2, optimizer2)
    assert a == b
    for _ in range(5):
        losses.append(train_epoch(model2, optimizer2))
    assert losses[-1] < 0.8 * losses[0]
    with torch.no_grad():
        sample = model2.decode(torch.randn(8, 4))
    assert sample.shape == (8, 16) and bool(((sample >= 0) & (sample <= 1)).all())


@needs_distributions
def test_vae_with_distributions():
    torch.manual_seed(0)
    data = _vae_data()
    model = _VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(6):
        for i in range(0, 128, 32):  # noqa: B007 - as the tutorial writes it
            x = data[i:i + 32]
            mu, logvar = model.encode(x)
            q = torch.distributions.Normal(mu, torch.exp(0.5 * logvar))
            p = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(mu))
            z = q.rsample()
            recon = model.decode(z)
            kl = torch.distributions.kl_divergence(q, p).sum()
            loss = F.binary_cross_entropy(recon, x, reduction="sum") + kl
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    assert _falls(losses)


# ----- 5. GAN (the DCGAN tutorial's loop, on 2-D points) --------------------------------------


def test_gan():
    torch.manual_seed(999)
    nz = 4

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find("Linear") != -1:
            nn.init.normal_(m.weight.data, 0.0, 0.2)
            nn.init.constant_(m.bias.data, 0)
        elif classname.find("BatchNorm") != -1:
            nn.init.normal_(m.weight.data, 1.0, 0.02)
            nn.init.constant_(m.bias.data, 0)

    netG = nn.Sequential(nn.Linear(nz, 16), nn.BatchNorm1d(16), nn.ReLU(True), nn.Linear(16, 2))
    netD = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2, inplace=True), nn.Linear(16, 1),
                         nn.Sigmoid())  # fmt: skip
    netG.apply(weights_init)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    real_label, fake_label = 1.0, 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=0.01, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=0.01, betas=(0.5, 0.999))
    target = torch.tensor([2.0, -1.0])
    G_losses, D_losses, log = [], [], []
    for i in range(150):  # noqa: B007 - as the tutorial writes it
        real = target + 0.1 * torch.randn(32, 2)
        b_size = real.size(0)
        netD.zero_grad()
        label = torch.full((b_size,), real_label, dtype=torch.float)
        output = netD(real).view(-1)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        noise = torch.randn(b_size, nz)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach()).view(-1)
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake).view(-1)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()
        G_losses.append(errG.item())
        D_losses.append(errD.item())
        log.append(f"Loss_D: {errD.item():.4f}\tLoss_G: {errG.item():.4f}\tD(x): {D_x:.4f}")
    assert all(math.isfinite(v) for v in G_losses + D_losses)
    with torch.no_grad():
        netG.eval()
        mean = netG(torch.randn(512, nz)).mean(0)
    # The generator's samples moved from around 0 to the real data's mean.
    assert float((mean - target).abs().max()) < 0.6


# ----- 6. seq2seq GRU with attention (the translation tutorial) ------------------------------


def test_seq2seq_gru_attention():
    torch.manual_seed(0)
    SOS_token, EOS_token, MAX_LENGTH = 0, 1, 6
    vocab = 8

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size, dropout_p=0.1):
            super().__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input):
            embedded = self.dropout(self.embedding(input))
            output, hidden = self.gru(embedded)
            return output, hidden

    class BahdanauAttention(nn.Module):
        def __init__(self, hidden_size):
            super().__init__()
            self.Wa = nn.Linear(hidden_size, hidden_size)
            self.Ua = nn.Linear(hidden_size, hidden_size)
            self.Va = nn.Linear(hidden_size, 1)

        def forward(self, query, keys):
            scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
            scores = scores.squeeze(2).unsqueeze(1)
            weights = F.softmax(scores, dim=-1)
            context = torch.bmm(weights, keys)
            return context, weights

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size, dropout_p=0.1):
            super().__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attention = BahdanauAttention(hidden_size)
            self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
            self.out = nn.Linear(hidden_size, output_size)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
            batch_size = encoder_outputs.size(0)
            decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
            decoder_hidden = encoder_hidden
            decoder_outputs = []
            attentions = []
            for i in range(MAX_LENGTH):  # noqa: B007 - as the tutorial writes it
                decoder_output, decoder_hidden, attn_weights = self.forward_step(
                    decoder_input, decoder_hidden, encoder_outputs
                )
                decoder_outputs.append(decoder_output)
                attentions.append(attn_weights)
                if target_tensor is not None:
                    decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing
                else:
                    _, topi = decoder_output.topk(1)
                    decoder_input = topi.squeeze(-1).detach()
            decoder_outputs = torch.cat(decoder_outputs, dim=1)
            decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
            attentions = torch.cat(attentions, dim=1)
            return decoder_outputs, decoder_hidden, attentions

        def forward_step(self, input, hidden, encoder_outputs):
            embedded = self.dropout(self.embedding(input))
            query = hidden.permute(1, 0, 2)
            context, attn_weights = self.attention(query, encoder_outputs)
            input_gru = torch.cat((embedded, context), dim=2)
            output, hidden = self.gru(input_gru, hidden)
            output = self.out(output)
            return output, hidden, attn_weights

    # Task: copy a sequence of tokens 2..7 (then EOS).
    src = torch.randint(2, vocab, (64, MAX_LENGTH - 1))
    src = torch.cat([src, torch.full((64, 1), EOS_token, dtype=torch.long)], 1)
    tgt = src.clone()
    encoder = EncoderRNN(vocab, 32)
    decoder = AttnDecoderRNN(32, vocab)
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=0.01)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=0.01)
    criterion = nn.NLLLoss()
    losses = []
    for epoch in range(25):  # noqa: B007 - as the tutorial writes it
        total_loss = 0
        for i in range(0, 64, 16):  # noqa: B007 - as the tutorial writes it
            input_tensor, target_tensor = src[i:i + 16], tgt[i:i + 16]
            encoder_optimizer.zero_grad()
            decoder_optimizer.zero_grad()
            encoder_outputs, encoder_hidden = encoder(input_tensor)
            decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)
            loss = criterion(
                decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1)
            )
            loss.backward()
            encoder_optimizer.step()
            decoder_optimizer.step()
            total_loss += loss.item()
        losses.append(total_loss / 4)
    assert losses[-1] < 0.5 * losses[0]
    encoder.eval()
    decoder.eval()
    with torch.no_grad():
        encoder_outputs, encoder_hidden = encoder(src[:8])
        decoder_outputs, _, attn = decoder(encoder_outputs, encoder_hidden)
        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()
    assert decoded_ids.shape == (8, MAX_LENGTH) and attn.shape == (8, MAX_LENGTH, MAX_LENGTH)
    assert (decoded_ids == src[:8]).float().mean().item() > 0.5


# ----- 7. DataLoader + ReduceLROnPlateau ------------------------------------------------------


def test_dataloader_reduce_lr_on_plateau():
    from ferrograd.utils.data import DataLoader, TensorDataset, random_split

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    X = torch.randn(256, 4)
    w_true = torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    y = X @ w_true + 0.1 * torch.randn(256, 1)
    train_ds, val_ds = random_split(TensorDataset(X, y), [192, 64])
    train_loader = DataLoader(train_ds, batch_size=32, shuffle=True, num_workers=0,
                              pin_memory=True)  # fmt: skip
    val_loader = DataLoader(val_ds, batch_size=64)
    model = nn.Linear(4, 1).to(device)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, "min", factor=0.5, patience=1)
    val_losses, lrs = [], []
    for epoch in range(12):  # noqa: B007 - as the tutorial writes it
        model.train()
        for xb, yb in train_loader:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            loss = F.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = sum(F.mse_loss(model(xb), yb, reduction="sum").item()
                           for xb, yb in val_loader) / len(val_ds)  # fmt: skip
        scheduler.step(val_loss)
        val_losses.append(val_loss)
        lrs.append(optimizer.param_groups[0]["lr"])
    assert val_losses[-1] < 0.05  # the noise level is 0.01
    np.testing.assert_allclose(model.weight.detach().numpy().ravel(), [1, -2, 0.5, 3], atol=0.1)
    # Once the loss stops improving the learning rate is halved, and only then.
    assert lrs[0] == 0.1 and min(lrs) < 0.1
    assert all(b in (a, a * 0.5) for a, b in zip(lrs, lrs[1:]))


# ----- 8. custom autograd.Function + gradcheck ------------------------------------------------


def test_custom_function_gradcheck():
    class LegendrePolynomial3(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    from ferrograd.autograd import Variable, gradcheck

    inp = Variable(torch.randn(20, dtype=torch.double), requires_grad=True)
    assert gradcheck(LegendrePolynomial3.apply, (inp,), eps=1e-6, atol=1e-4)

    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)
    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
    learning_rate = 5e-6
    losses = []
    for t in range(2000):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        if t % 100 == 99:
            losses.append(f"{t} {loss.item():.2f}")
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    # The tutorial's printout ends near 8.5 after its 2000 steps (PyTorch's docs).
    assert float(loss) < 10
    assert losses[0].startswith("99 ") and len(losses) == 20
    # The fit is the tutorial's: y ~ -5e-9 - 2.2 * P3(5e-10 + 0.26 x) within its loss.
    xs = x.numpy()
    fit = a.item() + b.item() * 0.5 * (5 * (c.item() + d.item() * xs) ** 3
                                       - 3 * (c.item() + d.item() * xs))  # fmt: skip
    assert np.mean((fit - np.sin(xs)) ** 2) < 10 / 2000 * 1.01


# ----- 9. PINN with torch.func ----------------------------------------------------------------


def test_pinn_torch_func():
    from ferrograd.func import functional_call, grad, vmap

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh(),
                          nn.Linear(24, 1))  # fmt: skip
    params = {k: v.detach() for k, v in model.named_parameters()}

    def u(params, x):
        return functional_call(model, params, (x.reshape(1, 1),)).squeeze()

    u_x = grad(u, argnums=1)
    u_xx = grad(u_x, argnums=1)

    def loss_fn(params, x_col, x_bc):
        # -u'' = pi^2 sin(pi x) on (0, 1), u(0) = u(1) = 0: u = sin(pi x).
        res = vmap(u_xx, in_dims=(None, 0))(params, x_col) + math.pi**2 * torch.sin(math.pi * x_col)
        bc = vmap(u, in_dims=(None, 0))(params, x_bc)
        return (res ** 2).mean() + 10 * (bc ** 2).mean()

    x_col = torch.linspace(0, 1, 32)
    x_bc = torch.tensor([0.0, 1.0])
    opt_params = {k: v.clone().requires_grad_() for k, v in params.items()}
    opt = optim.Adam(opt_params.values(), lr=1e-2)
    losses = []
    for step in range(300):  # noqa: B007 - as the tutorial writes it
        opt.zero_grad()
        loss = loss_fn(opt_params, x_col, x_bc)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]
    xs = torch.linspace(0, 1, 11)
    with torch.no_grad():
        pred = vmap(u, in_dims=(None, 0))(opt_params, xs)
    np.testing.assert_allclose(pred.numpy(), np.sin(np.pi * xs.numpy()), atol=0.1)


# ----- 10. transfer learning with BatchNorm ---------------------------------------------------


def test_transfer_learning_batchnorm():
    torch.manual_seed(0)

    class TinyResNet(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, bias=False),
                                        nn.BatchNorm2d(8), nn.ReLU(inplace=True))  # fmt: skip
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(8, num_classes)

        def forward(self, x):
            x = self.relu(self.bn1(self.conv1(x)))
            x = self.layer1(x)
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            return self.fc(x)

    model_conv = TinyResNet()
    for param in model_conv.parameters():
        param.requires_grad = False
    num_ftrs = model_conv.fc.in_features
    model_conv.fc = nn.Linear(num_ftrs, 2)
    model_conv = model_conv.to(memory_format=torch.channels_last)
    criterion = nn.CrossEntropyLoss()
    optimizer_conv = optim.SGD(model_conv.fc.parameters(), lr=0.1, momentum=0.9)
    exp_lr_scheduler = optim.lr_scheduler.StepLR(optimizer_conv, step_size=7, gamma=0.1)

    labels_all = torch.randint(0, 2, (64,))
    images_all = torch.randn(64, 3, 8, 8) + labels_all.float().view(-1, 1, 1, 1)
    dataloaders = {
        "train": [(images_all[i:i + 16], labels_all[i:i + 16]) for i in range(0, 48, 16)],
        "val": [(images_all[48:], labels_all[48:])],
    }
    dataset_sizes = {"train": 48, "val": 16}
    best_model_wts = copy.deepcopy(model_conv.state_dict())
    best_acc = 0.0
    printed = []
    frozen = model_conv.conv1.weight.detach().clone()
    for epoch in range(8):  # noqa: B007 - as the tutorial writes it
        for phase in ["train", "val"]:
            if phase == "train":
                model_conv.train()
            else:
                model_conv.eval()
            running_loss = 0.0
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                inputs = inputs.to(memory_format=torch.channels_last)
                optimizer_conv.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model_conv(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer_conv.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == "train":
                exp_lr_scheduler.step()
            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            printed.append(f"{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}")
            if phase == "val" and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model_conv.state_dict())
    model_conv.load_state_dict(best_model_wts)
    assert printed[0].startswith("train Loss: ") and " Acc: " in printed[0]
    assert float(best_acc) >= 0.75
    # The frozen backbone did not move; its BatchNorm statistics did (train mode).
    assert torch.equal(model_conv.conv1.weight, frozen)
    assert int(model_conv.bn1.num_batches_tracked) > 0
    assert exp_lr_scheduler.get_last_lr() == [pytest.approx(0.1 * 0.1)]


# ----- 11. everyday idioms --------------------------------------------------------------------


def test_everyday_idioms(tmp_path):
    torch.manual_seed(42)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(4, 3, device=device)
    assert x.device == device and x.device.type == "cpu" and x.device.index is None
    assert x.device == torch.device("cpu") and x.device == "cpu"
    if x.device.type == "cuda":  # never true here
        torch.cuda.synchronize()
    assert {x.device: 1}[torch.device("cpu")] == 1
    print_line = f"mean {x.mean():.3f} max {x.max():8.4f} n={torch.tensor(7):d}"
    assert print_line.startswith("mean ") and "n=7" in print_line
    assert "{:.2f}".format(torch.tensor(1.239)) == "1.24"  # noqa: UP032 - the idiom itself
    assert f"{torch.tensor(2.5)}" == "2.5"
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(42)
    mem = torch.cuda.memory_allocated() if hasattr(torch.cuda, "memory_allocated") else 0
    assert mem == 0
    torch.set_num_interop_threads(1) if torch.get_num_interop_threads() < 1 else None
    assert torch.get_num_interop_threads() >= 1
    y = x.pin_memory().to(device, non_blocking=True)
    assert y is x
    a = torch.from_numpy(np.arange(6.0).reshape(2, 3))
    assert a.numpy().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = torch.range(0, 4)
    assert r.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    model = nn.Linear(3, 2)
    model.to(device)
    out = model(x).sum()
    out.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        total = nn.utils.clip_grad_norm(model.parameters(), max_norm=1e9)
    expected = math.sqrt(sum(float((p.grad ** 2).sum()) for p in model.parameters()))
    assert float(total) == pytest.approx(expected, rel=1e-5)
    v = torch.autograd.Variable(torch.ones(2), requires_grad=True)
    assert isinstance(v, torch.Tensor) and v.requires_grad and isinstance(v, torch.autograd.Variable)
    torch.save(model.state_dict(), tmp_path / "m.pt")
    model.load_state_dict(torch.load(tmp_path / "m.pt", map_location=device))
    assert next(model.parameters()).device.type == "cpu"
    with torch.no_grad():
        probs = F.softmax(model(x), dim=1)
    np.testing.assert_allclose(probs.sum(1).numpy(), np.ones(4), rtol=1e-6)
    assert torch.is_tensor(probs) and probs.is_meta is False and probs.is_pinned() is False


# ----- 12. TransformerEncoder + OneCycleLR (+ AMP) --------------------------------------------


class _PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


class _TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model=32, nhead=2, d_hid=64, nlayers=2, dropout=0.0):
        super().__init__()
        self.model_type = "Transformer"
        self.pos_encoder = _PositionalEncoding(d_model, dropout)
        encoder_layers = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src, src_mask=None):
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        output = self.transformer_encoder(src, src_mask)
        return self.linear(output)


def _transformer_run(use_amp):
    torch.manual_seed(0)
    device = "cpu"
    ntokens = 10
    model = _TransformerModel(ntokens).to(device)
    criterion = nn.CrossEntropyLoss()
    steps = 60
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=5e-3, total_steps=steps)
    ctx = nullcontext()
    scaler = None
    if use_amp:
        scaler = torch.amp.GradScaler(device, enabled=False)
        ctx = torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=False)
    seq = torch.tensor([i % ntokens for i in range(400)])
    bptt = 12
    losses, lrs = [], []
    model.train()
    for step in range(steps):  # noqa: B007 - as the tutorial writes it
        i = (step * bptt) % (len(seq) - bptt - 1)
        data = torch.stack([seq[i + j:i + j + bptt] for j in range(4)], 1)  # (seq, batch)
        targets = torch.stack([seq[i + j + 1:i + j + bptt + 1] for j in range(4)], 1)
        with ctx:
            output = model(data)
            loss = criterion(output.view(-1, ntokens), targets.reshape(-1))
        optimizer.zero_grad()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        lrs.append(scheduler.get_last_lr()[0])
    return losses, lrs


def test_transformer_encoder_one_cycle():
    losses, lrs = _transformer_run(use_amp=False)
    assert _falls(losses, 0.5)

    # OneCycleLR's closed form (cosine annealing, PyTorch's defaults: pct_start 0.3,
    # div_factor 25, final_div_factor 1e4): warm-up ends at step 0.3 * 60 - 1 = 17.
    def cos(start, end, pct):
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    max_lr, initial = 5e-3, 5e-3 / 25
    minimum = initial / 1e4
    expected = []
    for step in range(1, 61):  # noqa: B007 - as the tutorial writes it
        if step <= 17:
            expected.append(cos(initial, max_lr, step / 17))
        else:
            expected.append(cos(max_lr, minimum, (step - 17) / (59 - 17)))
    np.testing.assert_allclose(lrs, expected, rtol=1e-9)


@needs_amp
def test_transformer_encoder_one_cycle_amp():
    losses, _ = _transformer_run(use_amp=True)
    assert _falls(losses, 0.5)


# ----- 13. REINFORCE --------------------------------------------------------------------------


@needs_distributions
def test_reinforce():
    from ferrograd.distributions import Categorical

    torch.manual_seed(543)
    rng = np.random.default_rng(543)
    gamma, eps = 0.99, np.finfo(np.float32).eps.item()

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(2, 32)
            self.dropout = nn.Dropout(p=0.0)
            self.affine2 = nn.Linear(32, 2)
            self.saved_log_probs = []
            self.rewards = []

        def forward(self, x):
            x = self.affine1(x)
            x = self.dropout(x)
            x = F.relu(x)
            action_scores = self.affine2(x)
            return F.softmax(action_scores, dim=1)

    policy = Policy()
    optimizer = optim.Adam(policy.parameters(), lr=2e-2)

    def select_action(state):
        state = torch.from_numpy(state).float().unsqueeze(0)
        probs = policy(state)
        m = Categorical(probs)
        action = m.sample()
        policy.saved_log_probs.append(m.log_prob(action))
        return action.item()

    def finish_episode():
        R = 0
        policy_loss = []
        returns = []
        for r in policy.rewards[::-1]:
            R = r + gamma * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        for log_prob, R in zip(policy.saved_log_probs, returns):
            policy_loss.append(-log_prob * R)
        optimizer.zero_grad()
        policy_loss = torch.cat(policy_loss).sum()
        policy_loss.backward()
        optimizer.step()
        del policy.rewards[:]
        del policy.saved_log_probs[:]

    # A contextual bandit as the environment: the right action is the sign of state[0].
    def episode_reward():
        total = 0
        for _ in range(10):
            state = rng.standard_normal(2).astype(np.float32)
            action = select_action(state)
            reward = 1.0 if action == int(state[0] > 0) else 0.0
            policy.rewards.append(reward)
            total += reward
        finish_episode()
        return total

    rewards = [episode_reward() for _ in range(120)]
    assert np.mean(rewards[-20:]) > np.mean(rewards[:20]) + 2
