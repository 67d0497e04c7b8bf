"""End-to-end workloads over the torch.distributed backend: tensor-parallel layers, a small
character-level language model, and the accuracy study of low-precision all_reduce."""
