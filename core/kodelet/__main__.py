from kodelet.cli.app import main

main()
