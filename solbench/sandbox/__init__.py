"""What runs in the candidate's process (the untrusted side of the trust boundary), and nothing else."""
