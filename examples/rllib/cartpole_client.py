"""Play CartPole locally, asking a ``PolicyServer`` for every action (see cartpole_server.py).

With ``--off-policy`` the client picks random actions itself and only logs
them (``log_action``), so the server learns from experience it did not choose.
Exits when ``--episodes`` are done or the server goes away.
"""

import argparse

import gymnasium as gym

from ray.rllib.utils.policy_client import PolicyClient


def main(address="localhost:8900", episodes=None, off_policy=False, seed=0):
    env = gym.make("CartPole-v1")
    client = PolicyClient(address)
    returns = []
    try:
        while episodes is None or len(returns) < episodes:
            obs, _ = env.reset(seed=seed + len(returns))
            episode_id = client.start_episode(training_enabled=True)
            total, done = 0.0, False
            while not done:
                if off_policy:
                    action = env.action_space.sample()
                    client.log_action(episode_id, obs, action)
                else:
                    action = client.get_action(episode_id, obs)
                obs, reward, terminated, truncated, _ = env.step(action)
                total += reward
                client.log_returns(episode_id, reward)
                done = terminated or truncated
            client.end_episode(episode_id, obs)
            returns.append(total)
            print(f"episode {len(returns)} return {total}", flush=True)
    except (ConnectionError, ValueError) as error:  # the server stopped
        print(f"stopping: {error}", flush=True)
    finally:
        client.close()
    return returns


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default="localhost:8900")
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--off-policy", action="store_true")
    args = parser.parse_args()
    main(args.address, args.episodes, args.off_policy)
