"""What every stage may use: user errors, where bundled files live, resources, devices, versions."""
