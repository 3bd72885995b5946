// parity_driver list                  -> the registered case names, one a line
// parity_driver NAME DIR              -> run case NAME on the files in DIR (see parity.h)
// parity_driver list-rewrite          -> the rewrite-only net types
// parity_driver rewrite NAME IN OUT   -> read IN into net type NAME and write it to OUT
#include "parity.h"

#include <iostream>

int main(int argc, char** argv)
{
    try
    {
        const std::string cmd = argc > 1 ? argv[1] : "";
        if (argc == 2 && (cmd == "list" || cmd == "list-rewrite"))
        {
            if (cmd == "list")
                for (auto& kv : parity::registry()) std::cout << kv.first << "\n";
            else
                for (auto& kv : parity::rewriters()) std::cout << kv.first << "\n";
            return 0;
        }
        if (argc == 5 && cmd == "rewrite")
        {
            auto it = parity::rewriters().find(argv[2]);
            if (it == parity::rewriters().end())
            {
                std::cerr << "parity_driver: no rewrite type named " << argv[2] << "\n";
                return 2;
            }
            it->second(argv[3], argv[4]);
            return 0;
        }
        if (argc != 3)
        {
            std::cerr << "usage: parity_driver list | list-rewrite | NAME DIR | rewrite NAME IN OUT\n";
            return 2;
        }
        auto it = parity::registry().find(cmd);
        if (it == parity::registry().end())
        {
            std::cerr << "parity_driver: no net type named " << cmd << "\n";
            return 2;
        }
        return it->second(argv[2]);
    }
    catch (std::exception& e)
    {
        std::cerr << "parity_driver " << (argc > 1 ? argv[1] : "") << ": " << e.what() << "\n";
        return 1;
    }
}
