"""gpudoctor: is this GPU host fit for multi-GPU PyTorch training, and what must be fixed?"""
__version__ = "0.1.0"
