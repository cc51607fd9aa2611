"""Script: leapfrog integration of a few hundred gravitating bodies (all pairs, softened)."""
import numpy

from ._common import njit

NAME = "nbody"
SIZES = {"small": {"bodies": 200, "steps": 20}, "large": {"bodies": 500, "steps": 200}}


def inputs(size):
    rng = numpy.random.default_rng(17)
    n, steps = SIZES[size]["bodies"], SIZES[size]["steps"]
    mass = 20.0 * numpy.ones((n, 1)) / n
    pos = rng.standard_normal((n, 3))
    vel = rng.standard_normal((n, 3))
    vel -= numpy.mean(mass * vel, axis=0) / numpy.mean(mass)
    return (pos, vel, mass, steps, 0.01, 0.1)


def acceleration(np, pos, mass, soft):
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx, dy, dz = x.T - x, y.T - y, z.T - z
    inv_r3 = dx ** 2 + dy ** 2 + dz ** 2 + soft ** 2
    inv_r3[inv_r3 > 0] = inv_r3[inv_r3 > 0] ** (-1.5)
    ax = (dx * inv_r3) @ mass
    ay = (dy * inv_r3) @ mass
    az = (dz * inv_r3) @ mass
    return np.hstack((ax, ay, az))


def kernel(np, pos, vel, mass, steps, dt, soft):
    pos, vel = pos.copy(), vel.copy()
    acc = acceleration(np, pos, mass, soft)
    for _ in range(steps):
        vel += acc * dt / 2.0
        pos += vel * dt
        acc = acceleration(np, pos, mass, soft)
        vel += acc * dt / 2.0
    kinetic = 0.5 * np.sum(mass * vel ** 2)
    return pos, vel, kinetic


@njit
def numba_kernel(pos, vel, mass, steps, dt, soft):
    n = pos.shape[0]
    pos, vel = pos.copy(), vel.copy()
    acc = numpy.zeros((n, 3))

    for step in range(steps + 1):
        acc[:, :] = 0.0
        for i in range(n):
            for j in range(n):
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                dz = pos[j, 2] - pos[i, 2]
                inv_r3 = (dx * dx + dy * dy + dz * dz + soft * soft) ** (-1.5)
                acc[i, 0] += dx * inv_r3 * mass[j, 0]
                acc[i, 1] += dy * inv_r3 * mass[j, 0]
                acc[i, 2] += dz * inv_r3 * mass[j, 0]
        if step > 0:
            vel += acc * dt / 2.0
        if step < steps:
            vel += acc * dt / 2.0
            pos += vel * dt
    kinetic = 0.5 * numpy.sum(mass * vel ** 2)
    return pos, vel, kinetic


def jax_kernel(jnp, pos, vel, mass, steps, dt, soft):
    import jax

    def acceleration(pos):
        d = pos[None, :, :] - pos[:, None, :]
        inv_r3 = (jnp.sum(d ** 2, axis=2) + soft ** 2) ** (-1.5)
        return jnp.einsum("ijk,ij,j->ik", d, inv_r3, mass[:, 0])

    def step(_, state):
        pos, vel, acc = state
        vel = vel + acc * dt / 2.0
        pos = pos + vel * dt
        acc = acceleration(pos)
        return pos, vel + acc * dt / 2.0, acc
    pos, vel, _ = jax.lax.fori_loop(0, steps, step, (pos, vel, acceleration(pos)))
    return pos, vel, 0.5 * jnp.sum(mass * vel ** 2)
