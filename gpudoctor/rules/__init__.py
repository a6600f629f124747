"""Rules check the facts and give findings. Importing this package registers every rule family."""
# Each family module registers its rules on import; the order is the report's order.
from gpudoctor.rules import (  # noqa: F401,E402
    cluster,  # noqa: F401,E402  (CLU: scope="cluster", run by gpudoctor cluster only)
    compat,  # noqa: F401,E402
    confirmation,  # noqa: F401,E402
    driver,
    gpu_health,
    host,
    logs,  # noqa: F401,E402  (SIG signatures, LOG log facts)
    nccl_env,
    pcie,
    performance,  # noqa: F401,E402  (PRF: self-test, SKU table, baseline, siblings)
    topology,  # noqa: F401,E402
    torch_rules,
)
from gpudoctor.rules.engine import REGISTRY, evaluate, rule  # noqa: F401
