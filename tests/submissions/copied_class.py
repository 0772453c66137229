"""A class with copies made as students make them, for the similarity report.

Five students (s00 to s04) each write parts 3, 4 and 5 (``compute_value_targets``,
``merge_time_batch``, ``a2c``) their own way, by hand (:data:`OWN`); seven more (s05 to s11)
write every part as :func:`tests.submissions.generated_class.student_parts` draws it. Four copy
one part of a classmate (:data:`COPIES`), each the way copiers do:

* s12 copies s00's ``merge_time_batch`` with ``key``, ``value`` and ``trajectory`` renamed and
  its ``if``/``elif`` branches reordered (the whole cell rewritten);
* s13 copies s01's ``compute_value_targets`` with statements reordered, a docstring, comments,
  dead code, a line split over two and a ``with`` block joined onto one line;
* s14 copies s02's ``a2c`` into a helper cell it adds above the part, whose cell then reads
  ``class A2C(_Mine): pass`` (the grader runs both cells);
* s15 copies s03's ``a2c`` below a 40,000-character comment, names changed.

Every other part of the copiers is their own (drawn). :func:`class_notebooks` gives each
student's notebook (the release with their code), for
:func:`tests.submissions.generated_class.write_notebooks`.
"""

from __future__ import annotations

import nbformat

from tests.submissions.generated_class import notebook_of, student_parts

__all__ = ["COPIES", "OWN", "class_notebooks"]

#: Each writer's own code of three parts (a method's body, or a whole cell).
OWN: dict[str, dict[str, str]] = {
    "s00": {
        "merge_time_batch": """\
merged = {}
for key, value in trajectory.items():
    if key == "state":
        merged[key] = value
    elif isinstance(value, list) and isinstance(value[0], torch.Tensor):
        merged[key] = torch.stack(value).reshape(-1, *value[0].shape[1:])
    elif isinstance(value, list):
        merged[key] = np.stack(value).reshape(-1, *np.shape(value[0])[1:])
    elif isinstance(value, torch.Tensor) and value.dim() >= 2:
        merged[key] = value.reshape(-1, *value.shape[2:])
    else:
        merged[key] = value
trajectory.update(merged)
return trajectory""",
        "compute_value_targets": """\
rewards, resets = trajectory["rewards"], trajectory["resets"]
with torch.no_grad():
    last = self.policy.act(trajectory["state"]["latest_observation"])["values"]
targets = [None] * len(rewards)
running = last
for t in reversed(range(len(rewards))):
    r = torch.as_tensor(rewards[t], dtype=torch.float32, device=running.device)
    done = torch.as_tensor(resets[t], dtype=torch.float32, device=running.device)
    running = r + self.gamma * (1.0 - done) * running
    targets[t] = running
trajectory["value_targets"] = targets""",
        "a2c": """\
log_probs = trajectory["log_probs"]
values = trajectory["values"]
targets = torch.as_tensor(trajectory["value_targets"], device=values.device).detach()
advantages = targets - values
policy_loss = -(log_probs * advantages.detach()).mean()
value_loss = advantages.pow(2).mean()
probs = torch.softmax(trajectory["logits"], dim=-1)
entropy = -(probs * torch.log_softmax(trajectory["logits"], dim=-1)).sum(-1).mean()
loss = policy_loss + self.value_loss_coef * value_loss - self.entropy_coef * entropy
self.optimizer.zero_grad()
loss.backward()
grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(), self.max_grad_norm)
self.optimizer.step()
return {"loss": loss.item(), "policy_loss": policy_loss.item(),
        "value_loss": value_loss.item(), "entropy": entropy.item(), "grad_norm": float(grad_norm)}""",
    },
    "s01": {
        "merge_time_batch": """\
T = len(trajectory["rewards"])
for k in list(trajectory):
    if k == "state":
        continue
    v = trajectory[k]
    if isinstance(v, (list, tuple)):
        first = v[0]
        if torch.is_tensor(first):
            trajectory[k] = torch.cat([x.unsqueeze(0) for x in v], dim=0).flatten(0, 1)
        else:
            arr = np.concatenate([np.asarray(x)[None] for x in v])
            trajectory[k] = arr.reshape((-1,) + np.asarray(first).shape[1:])
    elif torch.is_tensor(v) and v.shape[0] == T:
        trajectory[k] = v.flatten(0, 1)
return trajectory""",
        "compute_value_targets": """\
obs = trajectory["state"]["latest_observation"]
with torch.no_grad():
    bootstrap = self.policy.act(obs)["values"].detach().cpu().numpy()
rew = np.asarray(trajectory["rewards"], dtype=np.float32)
done = np.asarray(trajectory["resets"], dtype=np.float32)
T, N = rew.shape
out = np.zeros((T, N), dtype=np.float32)
nxt = bootstrap
for t in range(T - 1, -1, -1):
    nxt = rew[t] + self.gamma * nxt * (1.0 - done[t])
    out[t] = nxt
device = next(self.policy.model.parameters()).device
trajectory["value_targets"] = torch.from_numpy(out).to(device)
return trajectory""",
        "a2c": """\
dist = torch.distributions.Categorical(logits=trajectory["logits"])
ent = dist.entropy().mean()
adv = trajectory["value_targets"] - trajectory["values"]
pl = torch.mean(-trajectory["log_probs"] * adv.detach())
vl = torch.mean(adv * adv)
total = pl + vl * self.value_loss_coef - ent * self.entropy_coef
for p in self.policy.model.parameters():
    p.grad = None
total.backward()
params = [p for p in self.policy.model.parameters() if p.grad is not None]
norm = nn.utils.clip_grad_norm_(params, max_norm=self.max_grad_norm)
self.optimizer.step()
stats = dict(loss=total, policy_loss=pl, value_loss=vl, entropy=ent)
stats = {name: float(x.detach()) for name, x in stats.items()}
stats["grad_norm"] = float(norm)
return stats""",
    },
    "s02": {
        "merge_time_batch": """\
def flat(seq):
    if torch.is_tensor(seq[0]):
        return torch.stack(list(seq), 0).view(-1, *seq[0].shape[1:])
    arr = np.array(seq)
    return arr.reshape(arr.shape[0] * arr.shape[1], *arr.shape[2:])

keys = [k for k in trajectory if k != "state"]
for k in keys:
    item = trajectory[k]
    if isinstance(item, list):
        trajectory[k] = flat(item)
    elif item.ndim > 1:
        trajectory[k] = item.reshape(-1, *item.shape[2:])
return trajectory""",
        "compute_value_targets": """\
policy_out = self.policy.act(trajectory["state"]["latest_observation"])
v = policy_out["values"].detach()
collected = []
for reward, reset in zip(reversed(trajectory["rewards"]), reversed(trajectory["resets"])):
    mask = torch.tensor(~reset, dtype=v.dtype, device=v.device)
    v = torch.tensor(reward, dtype=v.dtype, device=v.device) + self.gamma * mask * v
    collected.insert(0, v)
trajectory["value_targets"] = torch.stack(collected)
return trajectory""",
        "a2c": """\
logits = trajectory["logits"]
log_pi = F.log_softmax(logits, dim=1)
pi = log_pi.exp()
H = -(pi * log_pi).sum(dim=1).mean()
actions = torch.as_tensor(trajectory["actions"], device=logits.device).long().view(-1, 1)
chosen = log_pi.gather(1, actions).squeeze(1)
A = trajectory["value_targets"].detach() - trajectory["values"]
actor = -(chosen * A.detach()).mean()
critic = (A ** 2).mean()
objective = actor + self.value_loss_coef * critic - self.entropy_coef * H
self.optimizer.zero_grad(set_to_none=True)
objective.backward()
gn = torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(), self.max_grad_norm)
self.optimizer.step()
return {"loss": float(objective), "policy_loss": float(actor), "value_loss": float(critic),
        "entropy": float(H), "grad_norm": float(gn)}""",
    },
    "s03": {
        "merge_time_batch": """\
result = dict(trajectory)
for field in trajectory:
    data = trajectory[field]
    if field == "state":
        continue
    if type(data) is list:
        if isinstance(data[0], np.ndarray):
            stacked = np.stack(data, axis=0)
            result[field] = stacked.reshape((stacked.shape[0] * stacked.shape[1],) + stacked.shape[2:])
        else:
            stacked = torch.stack(data, dim=0)
            result[field] = stacked.reshape((stacked.shape[0] * stacked.shape[1],) + tuple(stacked.shape[2:]))
    elif isinstance(data, torch.Tensor) and len(data.shape) == 2:
        result[field] = data.reshape(-1)
for field, data in result.items():
    trajectory[field] = data
return trajectory""",
        "compute_value_targets": """\
gamma = self.gamma
with torch.no_grad():
    future = self.policy.act(trajectory["state"]["latest_observation"])["values"].float()
dev = future.device
value_targets = []
for step in range(len(trajectory["rewards"]) - 1, -1, -1):
    not_done = 1 - torch.from_numpy(trajectory["resets"][step].astype(np.float32)).to(dev)
    future = torch.from_numpy(trajectory["rewards"][step]).to(dev) + gamma * future * not_done
    value_targets.append(future.clone())
value_targets.reverse()
trajectory["value_targets"] = value_targets
return trajectory""",
        "a2c": """\
batch_size = trajectory["values"].shape[0]
returns = trajectory["value_targets"].reshape(batch_size).to(trajectory["values"].device)
adv = returns - trajectory["values"]
logp_all = torch.log_softmax(trajectory["logits"], dim=-1)
p_all = torch.exp(logp_all)
entropy_term = torch.sum(-p_all * logp_all, dim=-1).mean()
actor_loss = -torch.mean(trajectory["log_probs"] * adv.detach())
critic_loss = torch.mean(torch.square(adv))
full = actor_loss + self.value_loss_coef * critic_loss - self.entropy_coef * entropy_term
self.optimizer.zero_grad()
full.backward()
clip_to = self.max_grad_norm
before = torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(), clip_to)
self.optimizer.step()
report = {}
report["loss"] = full.item()
report["policy_loss"] = actor_loss.item()
report["value_loss"] = critic_loss.item()
report["entropy"] = entropy_term.item()
report["grad_norm"] = before.item()
return report""",
    },
    "s04": {
        "merge_time_batch": """\
n_steps = len(trajectory["actions"])

def merge(xs):
    pieces = [xs[t] for t in range(n_steps)]
    if hasattr(pieces[0], "detach"):
        return torch.cat(pieces, dim=0)
    return np.concatenate(pieces, axis=0)

for name in ("observations", "actions", "rewards", "resets", "logits", "log_probs", "values"):
    trajectory[name] = merge(trajectory[name])
targets = trajectory.get("value_targets")
if isinstance(targets, list):
    trajectory["value_targets"] = merge(targets)
elif targets is not None:
    trajectory["value_targets"] = targets.reshape(-1)
return trajectory""",
        "compute_value_targets": """\
last_obs = trajectory["state"]["latest_observation"]
R = self.policy.act(last_obs)["values"].detach()
T = len(trajectory["rewards"])
targets = torch.empty((T,) + tuple(R.shape), device=R.device)
t = T - 1
while t >= 0:
    keep = torch.as_tensor(np.logical_not(trajectory["resets"][t]), device=R.device).float()
    R = torch.as_tensor(trajectory["rewards"][t], device=R.device).float() + self.gamma * keep * R
    targets[t] = R
    t -= 1
trajectory["value_targets"] = targets
return trajectory""",
        "a2c": """\
probs = trajectory["logits"].softmax(-1)
entropy = (-probs * probs.clamp_min(1e-8).log()).sum(-1).mean()
delta = trajectory["value_targets"].to(trajectory["values"]) - trajectory["values"]
losses = {
    "policy_loss": -(trajectory["log_probs"] * delta.detach()).mean(),
    "value_loss": delta.square().mean(),
    "entropy": entropy,
}
losses["loss"] = (losses["policy_loss"] + self.value_loss_coef * losses["value_loss"]
                  - self.entropy_coef * losses["entropy"])
self.optimizer.zero_grad()
losses["loss"].backward()
total_norm = torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(), self.max_grad_norm)
self.optimizer.step()
out = {key: value.item() for key, value in losses.items()}
out["grad_norm"] = total_norm.item()
return out""",
    },
}

_MERGE_RENAMED_REORDERED = '''\
class MergeTimeBatch:
    def __call__(self, traj):
        out = {}
        for name, entry in traj.items():
            if isinstance(entry, list) and isinstance(entry[0], torch.Tensor):
                out[name] = torch.stack(entry).reshape(-1, *entry[0].shape[1:])
            elif name == "state":
                out[name] = entry
            elif isinstance(entry, torch.Tensor) and entry.dim() >= 2:
                out[name] = entry.reshape(-1, *entry.shape[2:])
            elif isinstance(entry, list):
                out[name] = np.stack(entry).reshape(-1, *np.shape(entry[0])[1:])
            else:
                out[name] = entry
        traj.update(out)
        return traj
'''

_TARGETS_EDITED = '''\
"""n-step targets, computed backwards from the bootstrap value."""
# rewards and dones as arrays
dones = np.asarray(trajectory["resets"],
                   dtype=np.float32)
rewards = np.asarray(trajectory["rewards"], dtype=np.float32)
observation = trajectory["state"]["latest_observation"]
DEBUG = False
if DEBUG:
    print("shapes", rewards.shape, dones.shape)
with torch.no_grad(): value_next = self.policy.act(observation)["values"].detach().cpu().numpy()
steps, envs = rewards.shape
result = np.zeros((steps, envs), dtype=np.float32)  # (T, N)
for i in range(steps - 1, -1, -1):
    # bootstrap unless the episode ended here
    value_next = rewards[i] + self.gamma * value_next * (1.0 - dones[i])
    result[i] = value_next
dev = next(self.policy.model.parameters()).device
trajectory["value_targets"] = torch.from_numpy(result).to(dev)
return trajectory'''

_A2C_HELPER = '''\
class _Mine:
    def __init__(self, policy, optimizer, value_loss_coef=0.25, entropy_coef=0.01,
                 max_grad_norm=0.5):
        self.policy, self.optimizer = policy, optimizer
        self.vcoef, self.ecoef, self.clip = value_loss_coef, entropy_coef, max_grad_norm

    def step(self, batch):
        lg = batch["logits"]
        logp = F.log_softmax(lg, dim=1)
        p = logp.exp()
        ent = -(p * logp).sum(dim=1).mean()
        acts = torch.as_tensor(batch["actions"], device=lg.device).long().view(-1, 1)
        taken = logp.gather(1, acts).squeeze(1)
        adv = batch["value_targets"].detach() - batch["values"]
        pol = -(taken * adv.detach()).mean()
        val = (adv ** 2).mean()
        obj = pol + self.vcoef * val - self.ecoef * ent
        self.optimizer.zero_grad(set_to_none=True)
        obj.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(), self.clip)
        self.optimizer.step()
        return {"loss": float(obj), "policy_loss": float(pol), "value_loss": float(val),
                "entropy": float(ent), "grad_norm": float(norm)}
'''

_A2C_AFTER_COMMENT = "# " + "notes on the lecture " * 1905 + "\n" + '''\
n = trajectory["values"].shape[0]
rets = trajectory["value_targets"].reshape(n).to(trajectory["values"].device)
diff = rets - trajectory["values"]
lp = torch.log_softmax(trajectory["logits"], dim=-1)
pp = torch.exp(lp)
ent = torch.sum(-pp * lp, dim=-1).mean()
pol = -torch.mean(trajectory["log_probs"] * diff.detach())
crit = torch.mean(torch.square(diff))
tot = pol + self.value_loss_coef * crit - self.entropy_coef * ent
self.optimizer.zero_grad()
tot.backward()
limit = self.max_grad_norm
gnorm = torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(), limit)
self.optimizer.step()
info = {}
info["loss"] = tot.item()
info["policy_loss"] = pol.item()
info["value_loss"] = crit.item()
info["entropy"] = ent.item()
info["grad_norm"] = gnorm.item()
return info'''

#: copier -> (whose part, part key, the copy as the copier's part, a cell added above it)
COPIES: dict[str, tuple[str, str, str, str]] = {
    "s12": ("s00", "merge_time_batch", _MERGE_RENAMED_REORDERED, ""),
    "s13": ("s01", "compute_value_targets", _TARGETS_EDITED, ""),
    "s14": ("s02", "a2c", "class A2C(_Mine):\n    pass\n", _A2C_HELPER),
    "s15": ("s03", "a2c", _A2C_AFTER_COMMENT, ""),
}


def class_notebooks() -> dict[str, nbformat.NotebookNode]:
    """Every student's notebook (module docstring)."""
    students = {}
    for number in range(16):
        student = f"s{number:02d}"
        parts = dict(student_parts(seed=100 + number))
        parts.update(OWN.get(student, {}))
        above = {}
        if student in COPIES:
            original, key, copy, helper = COPIES[student]
            parts[key] = copy
            if helper:
                above[key] = helper
        students[student] = notebook_of(parts, above)
    return students
