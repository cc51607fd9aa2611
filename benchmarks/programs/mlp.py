"""Script: a 2-layer tanh/softmax MLP trained with minibatch SGD on synthetic blobs."""
import numpy

NAME = "mlp"
SIZES = {"small": {"samples": 2048, "epochs": 3}, "large": {"samples": 16384, "epochs": 10}}
FEATURES, HIDDEN, CLASSES, BATCH = 20, 64, 4, 64


def inputs(size):
    rng = numpy.random.default_rng(2024)
    n, epochs = SIZES[size]["samples"], SIZES[size]["epochs"]
    labels = rng.integers(0, CLASSES, n)
    centres = rng.normal(0.0, 2.0, (CLASSES, FEATURES))
    X = centres[labels] + rng.normal(0.0, 1.0, (n, FEATURES))
    Y = numpy.eye(CLASSES)[labels]
    W1 = rng.normal(0.0, 1.0 / numpy.sqrt(FEATURES), (FEATURES, HIDDEN))
    W2 = rng.normal(0.0, 1.0 / numpy.sqrt(HIDDEN), (HIDDEN, CLASSES))
    return (X, Y, W1, numpy.zeros(HIDDEN), W2, numpy.zeros(CLASSES), epochs, 0.1)


def kernel(np, X, Y, W1, b1, W2, b2, epochs, lr):
    W1, b1, W2, b2 = W1.copy(), b1.copy(), W2.copy(), b2.copy()
    n = X.shape[0]
    losses = []
    for _ in range(epochs):
        epoch_loss = 0.0
        for start in range(0, n, BATCH):
            xb, yb = X[start:start + BATCH], Y[start:start + BATCH]
            h = np.tanh(xb @ W1 + b1)
            logits = h @ W2 + b2
            e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
            p = e / np.sum(e, axis=1, keepdims=True)
            loss = -np.sum(yb * np.log(p + 1e-12)) / xb.shape[0]
            d_logits = (p - yb) / xb.shape[0]
            d_h = (d_logits @ W2.T) * (1.0 - h * h)
            W2 -= lr * (h.T @ d_logits)
            b2 -= lr * np.sum(d_logits, axis=0)
            W1 -= lr * (xb.T @ d_h)
            b1 -= lr * np.sum(d_h, axis=0)
            epoch_loss += float(loss)
        losses.append(epoch_loss)
    return W1, b1, W2, b2, numpy.asarray(losses)


def jax_kernel(jnp, X, Y, W1, b1, W2, b2, epochs, lr):
    import jax

    def loss_fn(params, xb, yb):
        W1, b1, W2, b2 = params
        h = jnp.tanh(xb @ W1 + b1)
        logits = h @ W2 + b2
        e = jnp.exp(logits - jnp.max(logits, axis=1, keepdims=True))
        p = e / jnp.sum(e, axis=1, keepdims=True)
        return -jnp.sum(yb * jnp.log(p + 1e-12)) / xb.shape[0]

    grad = jax.value_and_grad(loss_fn)
    batches = X.shape[0] // BATCH
    xs = X[:batches * BATCH].reshape(batches, BATCH, -1)
    ys = Y[:batches * BATCH].reshape(batches, BATCH, -1)

    def step(params, batch):
        loss, g = grad(params, *batch)
        return tuple(w - lr * gw for w, gw in zip(params, g, strict=True)), loss

    def epoch(params, _):
        params, losses = jax.lax.scan(step, params, (xs, ys))
        return params, jnp.sum(losses)
    params, losses = jax.lax.scan(epoch, (W1, b1, W2, b2), None, length=epochs)
    return (*params, losses)
