print("no deps")
