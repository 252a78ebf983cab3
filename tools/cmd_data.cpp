// placeholder until the data subcommands land
