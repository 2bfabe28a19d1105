"""What decides: inputs, the fp32 reference, verdicts, the evaluation loop, the runner, run files."""
