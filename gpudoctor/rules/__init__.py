"""Rules check the facts and give findings. Importing this package registers every rule family."""
from gpudoctor.rules.engine import REGISTRY, evaluate, rule  # noqa: F401

# Each family module registers its rules on import; the order is the report's order.
from gpudoctor.rules import driver, torch_rules, gpu_health, pcie, host, nccl_env  # noqa: F401,E402
from gpudoctor.rules import topology  # noqa: F401,E402
from gpudoctor.rules import compat  # noqa: F401,E402
from gpudoctor.rules import logs  # noqa: F401,E402  (SIG signatures, LOG log facts)
from gpudoctor.rules import confirmation  # noqa: F401,E402
from gpudoctor.rules import cluster  # noqa: F401,E402  (CLU: scope="cluster", run by gpudoctor cluster only)
