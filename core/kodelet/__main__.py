from kodelet.cli.entry import main

main()
