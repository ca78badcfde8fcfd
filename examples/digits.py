"""Train a small convolutional network on handwritten digits, save it, reload it and
draw what it learned.

The data is scikit-learn's copy of the UCI handwritten digits (1,797 images of
8x8 pixels, shipped inside the package: nothing is downloaded). The script

* trains a CNN with ``ferrograd.nn``, ``ferrograd.optim`` and
  ``ferrograd.utils.data``, showing a progress bar per epoch with the loss and
  accuracy;
* reports the held-out accuracy and the wall time (and, when PyTorch is
  installed, PyTorch's time for the very same code, which runs unchanged on
  either library);
* saves the model with ``ferrograd.save``, reloads it into a fresh model and
  checks that it predicts the same;
* writes ``loss.png`` (training and validation loss per epoch),
  ``graph.svg`` (one forward pass drawn by ``ferrograd.viz``) and
  ``predictions.png`` (test digits with their predicted labels).

    pip install ".[examples]" && python examples/digits.py
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import ferrograd


def load_data(seed=0):
    """Train/test split of the digits, pixels scaled to [0, 1], as NumPy arrays."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]  # N x 1 x 8 x 8
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.25, random_state=seed, stratify=y)


def build_model(lib):
    """The same network for ferrograd or PyTorch: ``lib`` is the imported module."""
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 32, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 32 x 4 x 4
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 64),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(64, 10),
    )


def evaluate(lib, model, x, y):
    """Mean loss and accuracy of ``model`` on tensors ``x``, ``y``."""
    model.eval()
    with lib.no_grad():
        logits = model(x)
        loss = lib.nn.functional.cross_entropy(logits, y).item()
        acc = (logits.argmax(1) == y).float().mean().item()
    model.train()
    return loss, acc


def train(lib, data, epochs, seed=0, progress=True):
    """Trains the CNN with ``lib`` (ferrograd or torch); returns the model and history."""
    x_train, x_test, y_train, y_test = data
    lib.manual_seed(seed)
    xt, yt = lib.from_numpy(x_train), lib.from_numpy(y_train)
    xv, yv = lib.from_numpy(x_test), lib.from_numpy(y_test)
    loader = lib.utils.data.DataLoader(
        lib.utils.data.TensorDataset(xt, yt),
        batch_size=64,
        shuffle=True,
        generator=lib.Generator().manual_seed(seed),
    )
    model = build_model(lib)
    optimizer = lib.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = lib.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.3)
    history = {"train_loss": [], "val_loss": [], "val_acc": []}
    bar = None
    if progress:
        from tqdm import tqdm

    start = time.perf_counter()
    for epoch in range(epochs):
        if progress:
            # Advanced by hand rather than wrapping the loader: a wrapping bar closes
            # itself when the loop ends, before the validation accuracy is known.
            bar = tqdm(total=len(loader), desc=f"epoch {epoch + 1:2d}/{epochs}", ncols=100)
        total, correct, seen = 0.0, 0, 0
        for xb, yb in loader:
            logits = model(xb)
            loss = lib.nn.functional.cross_entropy(logits, yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(yb)
            correct += int((logits.argmax(1) == yb).sum().item())
            seen += len(yb)
            if bar is not None:
                bar.set_postfix(loss=f"{total / seen:.4f}", acc=f"{correct / seen:.3f}", refresh=False)
                bar.update()
        scheduler.step()
        val_loss, val_acc = evaluate(lib, model, xv, yv)
        history["train_loss"].append(total / seen)
        history["val_loss"].append(val_loss)
        history["val_acc"].append(val_acc)
        if bar is not None:
            bar.set_postfix(
                loss=f"{total / seen:.4f}", acc=f"{correct / seen:.3f}", val_acc=f"{val_acc:.3f}"
            )
            bar.close()
    history["seconds"] = time.perf_counter() - start
    return model, history


def plot_loss(history, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = np.arange(1, len(history["train_loss"]) + 1)
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    ax.plot(epochs, history["train_loss"], "o-", label="training loss")
    ax.plot(epochs, history["val_loss"], "s-", label="validation loss")
    ax.set_xlabel("epoch")
    ax.set_ylabel("cross-entropy loss")
    ax.set_yscale("log")
    ax.set_title("ferrograd CNN on scikit-learn digits")
    ax.grid(True, which="both", alpha=0.3)
    ax2 = ax.twinx()
    ax2.plot(epochs, [100 * a for a in history["val_acc"]], "g--", alpha=0.6, label="val accuracy")
    ax2.set_ylabel("validation accuracy (%)", color="g")
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="center right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_predictions(images, labels, predicted, path, count=24):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 8
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(cols * 1.2, rows * 1.45), dpi=120)
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i >= count:
            continue
        ax.imshow(images[i, 0], cmap="gray_r", interpolation="nearest")
        ok = predicted[i] == labels[i]
        text = f"pred {predicted[i]}" if ok else f"pred {predicted[i]} (is {labels[i]})"
        ax.set_title(text, fontsize=8, color="green" if ok else "red")
    fig.suptitle("test digits and the model's predictions", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=25)
    parser.add_argument("--out", default="digits-output", help="folder for the model and pictures")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch comparison")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    fg = ferrograd
    data = load_data()
    x_test, y_test = data[1], data[3]
    print(f"digits: {len(data[0])} training and {len(x_test)} test images of 8x8 pixels")

    model, history = train(fg, data, args.epochs, progress=not args.no_progress)
    xv, yv = fg.from_numpy(x_test), fg.from_numpy(y_test)
    _, acc = evaluate(fg, model, xv, yv)
    print(f"ferrograd: held-out accuracy {100 * acc:.2f}% after {args.epochs} epochs, "
          f"training took {history['seconds']:.2f} s")

    torch_seconds = None
    if not args.no_torch:
        try:
            import torch
        except ImportError:
            print("PyTorch is not installed: no side-by-side time")
        else:
            torch.set_num_threads(fg.get_num_threads())
            _, th = train(torch, data, args.epochs, progress=False)
            torch_seconds = th["seconds"]
            print(f"PyTorch {torch.__version__}: the same script took {torch_seconds:.2f} s "
                  f"(ferrograd {torch_seconds / history['seconds']:.2f}x faster), "
                  f"final val accuracy {100 * th['val_acc'][-1]:.2f}%")

    # Save, reload into a fresh model, and check the predictions agree.
    path = os.path.join(args.out, "digits_cnn.safetensors")
    fg.save(model.state_dict(), path)
    fresh = build_model(fg)
    fresh.load_state_dict(fg.load(path))
    model.eval()
    fresh.eval()
    with fg.no_grad():
        before = model(xv).argmax(1)
        after = fresh(xv).argmax(1)
    same = bool((before == after).all().item())
    print(f"saved to {path} ({os.path.getsize(path) / 1024:.0f} KiB) and reloaded: "
          f"{'identical predictions' if same else 'PREDICTIONS DIFFER'}")
    if not same:
        raise SystemExit("the reloaded model predicts differently")

    plot_loss(history, os.path.join(args.out, "loss.png"))
    plot_predictions(x_test, y_test, before.numpy(), os.path.join(args.out, "predictions.png"))
    graph = fg.viz.make_dot(
        model(xv[:1]), params=dict(model.named_parameters()), show_saved=True
    )
    try:
        written = graph.render(os.path.join(args.out, "graph.svg"))
    except fg.viz.GraphvizNotFoundError as e:
        written = graph.save(os.path.join(args.out, "graph.dot"))
        print(e)
    print(f"pictures: {args.out}/loss.png, {args.out}/predictions.png, {written}")
    if acc < 0.97:
        raise SystemExit(f"accuracy {100 * acc:.2f}% is below the expected 97%")
    return acc


if __name__ == "__main__":
    main()
