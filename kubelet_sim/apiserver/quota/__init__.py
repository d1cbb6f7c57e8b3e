"""ResourceQuota and LimitRange as kube-apiserver serves them: the kinds' rules
(:mod:`.rules`), resource lists and their arithmetic (:mod:`.resource_lists`), what an
object uses (:mod:`.usage`), and the ResourceQuota and LimitRanger admission plugins
(:mod:`.quota_admission`, :mod:`.limit_ranger`)."""
